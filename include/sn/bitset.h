/*
 * sn/bitset.h: fixed-size bitsets over dense IDs (free GPUs, healthy GPUs,
 * members of a domain). Words are 64 bits; bits past nbits stay zero.
 */
#ifndef SN_BITSET_H
#define SN_BITSET_H

#include <stdbool.h>
#include <stdint.h>

#include <sn/error.h>

struct sn_bitset {
    uint32_t nbits;
    uint64_t *words; /* owned */
};

/* Allocates nbits cleared bits. */
SN_MUST_CHECK enum sn_err sn_bitset_init(struct sn_bitset *set, uint32_t nbits,
                                         struct sn_error *err);
/* Frees the words; the set can be initialised again. NULL is allowed. */
void sn_bitset_release(struct sn_bitset *set);

static inline void sn_bitset_set(struct sn_bitset *set, uint32_t bit)
{
    set->words[bit >> 6] |= (uint64_t)1 << (bit & 63);
}
static inline void sn_bitset_clear(struct sn_bitset *set, uint32_t bit)
{
    set->words[bit >> 6] &= ~((uint64_t)1 << (bit & 63));
}
static inline bool sn_bitset_test(const struct sn_bitset *set, uint32_t bit)
{
    return (set->words[bit >> 6] >> (bit & 63)) & 1;
}

void sn_bitset_clear_all(struct sn_bitset *set);
/* Sets bits [first, first + count). */
void sn_bitset_set_range(struct sn_bitset *set, uint32_t first, uint32_t count);
/* Number of set bits in [first, first + count). */
uint32_t sn_bitset_count_range(const struct sn_bitset *set, uint32_t first, uint32_t count);
uint32_t sn_bitset_count(const struct sn_bitset *set);
/* First set bit at or after from, or UINT32_MAX. */
uint32_t sn_bitset_next(const struct sn_bitset *set, uint32_t from);

#endif /* SN_BITSET_H */
