/*
 * Fixed-size bitsets. See sn/bitset.h. Invariant: bits at or past nbits in
 * the last word are always zero, so counts need no masking of the tail.
 */
#include <sn/bitset.h>

#include <stdlib.h>
#include <string.h>

static uint32_t words_for(uint32_t nbits)
{
    return (uint32_t)(((uint64_t)nbits + 63) / 64);
}

enum sn_err sn_bitset_init(struct sn_bitset *set, uint32_t nbits, struct sn_error *err)
{
    set->nbits = nbits;
    set->words = calloc(words_for(nbits) ? words_for(nbits) : 1, sizeof(uint64_t));
    if (!set->words)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for a bitset of %u bits", nbits);
    return SN_OK;
}

void sn_bitset_release(struct sn_bitset *set)
{
    if (!set)
        return;
    free(set->words);
    set->words = NULL;
    set->nbits = 0;
}

void sn_bitset_clear_all(struct sn_bitset *set)
{
    memset(set->words, 0, words_for(set->nbits) * sizeof(uint64_t));
}

void sn_bitset_set_range(struct sn_bitset *set, uint32_t first, uint32_t count)
{
    uint32_t end = first + count;
    while (first < end && (first & 63))
        sn_bitset_set(set, first++);
    while (first + 64 <= end) {
        set->words[first >> 6] = ~(uint64_t)0;
        first += 64;
    }
    while (first < end)
        sn_bitset_set(set, first++);
}

uint32_t sn_bitset_count_range(const struct sn_bitset *set, uint32_t first, uint32_t count)
{
    uint32_t end = first + count, total = 0;
    while (first < end && (first & 63))
        total += sn_bitset_test(set, first++);
    while (first + 64 <= end) {
        total += (uint32_t)__builtin_popcountll(set->words[first >> 6]);
        first += 64;
    }
    while (first < end)
        total += sn_bitset_test(set, first++);
    return total;
}

uint32_t sn_bitset_count(const struct sn_bitset *set)
{
    return sn_bitset_count_range(set, 0, set->nbits);
}

uint32_t sn_bitset_next(const struct sn_bitset *set, uint32_t from)
{
    if (from >= set->nbits)
        return UINT32_MAX;
    uint32_t w = from >> 6;
    uint64_t word = set->words[w] & (~(uint64_t)0 << (from & 63));
    uint32_t nwords = words_for(set->nbits);
    for (;;) {
        if (word)
            return w * 64 + (uint32_t)__builtin_ctzll(word);
        if (++w >= nwords)
            return UINT32_MAX;
        word = set->words[w];
    }
}
