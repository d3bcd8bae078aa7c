/*
 * libFuzzer harness: a Fabric Manager log through sn_fmlog_read(). On
 * success every event lies on a line of the input and has a kind; on
 * failure nothing is held and a message is set.
 */
#include <stdlib.h>

#include <sn/fmlog.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_fmlog l;
    struct sn_error err = {0};
    if (sn_fmlog_read((const char *)data, size, "fuzz", &l, &err) != SN_OK) {
        if (l.events || err.message[0] == '\0')
            abort();
        return 0;
    }
    for (uint32_t i = 0; i < l.n; i++)
        if (l.events[i].line == 0 || l.events[i].line > size + 1 ||
            l.events[i].kind >= SN_FMLOG_KIND_COUNT)
            abort();
    sn_fmlog_release(&l);
    return 0;
}
