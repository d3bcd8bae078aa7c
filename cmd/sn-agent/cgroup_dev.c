/*
 * Device isolation of a rank's cgroup v2 leaf (docs/agent.md, "Isolation"):
 * cgroup v2 has no devices.allow file; access to device nodes is decided by
 * a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the cgroup, as runc and
 * crun do. sn-agent assembles a small program by hand and loads it with the
 * bpf(2) syscall (no libbpf):
 *
 *   - character devices of major 195 (NVIDIA, /dev/nvidiaN) with a minor
 *     below 254 are denied unless the minor is one of the rank's GPUs
 *     (/dev/nvidiaN has minor N, the GPU's index on the node, which is what
 *     CUDA_VISIBLE_DEVICES holds);
 *   - minors 254 and 255 (/dev/nvidia-modeset, /dev/nvidiactl) and every
 *     other device (nvidia-uvm and nvidia-uvm-tools have their own dynamic
 *     major; null, zero, urandom, tty, pts, InfiniBand uverbs for RDMA)
 *     are allowed.
 *
 * So a job can open its own GPUs and the shared control devices, and no
 * other job's GPU, even by mknod-ing the node itself. Where the program
 * cannot be loaded or attached (no bpf(2), no CAP_BPF / CAP_SYS_ADMIN, a
 * leaf that is not cgroup v2), the rank runs without it and its isolation
 * note says why ("devices: not isolated: bpf: ...").
 */
#define _DEFAULT_SOURCE /* syscall() */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NVIDIA_MAJOR 195
#define NVIDIA_FIRST_CONTROL_MINOR 254 /* 254 nvidia-modeset, 255 nvidiactl */

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i;
    memset(&i, 0, sizeof(i));
    i.code = code;
    i.dst_reg = dst & 0xf;
    i.src_reg = src & 0xf;
    i.off = off;
    i.imm = imm;
    return i;
}

size_t cg_dev_program(const uint32_t *minors, size_t n, struct bpf_insn *out, size_t cap)
{
    /* r1 = ctx (struct bpf_cgroup_dev_ctx: access_type, major, minor) */
    size_t k = 0, need = 8 + n + 4;
    if (cap < need)
        return 0;
    size_t allow = need - 4; /* index of "r0 = 1" */
#define JUMP_TO_ALLOW(at) ((int16_t)(allow - (at)-1))
    out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0); /* access_type */
    out[k++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);    /* its type */
    out[k] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, JUMP_TO_ALLOW(k), BPF_DEVCG_DEV_CHAR);
    k++;
    out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0); /* major */
    out[k] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, JUMP_TO_ALLOW(k), NVIDIA_MAJOR);
    k++;
    out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0); /* minor */
    out[k] =
        insn(BPF_JMP | BPF_JGE | BPF_K, BPF_REG_4, 0, JUMP_TO_ALLOW(k), NVIDIA_FIRST_CONTROL_MINOR);
    k++;
    for (size_t i = 0; i < n; i++, k++)
        out[k] =
            insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, JUMP_TO_ALLOW(k), (int32_t)minors[i]);
    out[k++] = insn(BPF_JMP | BPF_JA, 0, 0, 2, 0);                    /* to "r0 = 0" */
    out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1); /* allow: r0 = 1 */
    out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0); /* deny: r0 = 0 */
    out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
#undef JUMP_TO_ALLOW
    return k;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
    return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* "0,3" (CUDA_VISIBLE_DEVICES of the rank) into minors; -1 when bad. */
static int parse_gpus(const char *gpus, uint32_t *out, size_t cap, size_t *n)
{
    *n = 0;
    for (const char *p = gpus; p && *p;) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= NVIDIA_FIRST_CONTROL_MINOR || *n == cap)
            return -1;
        out[(*n)++] = (uint32_t)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return 0;
}

int cg_devices(const char *leaf, const char *gpus, char *note, size_t cap)
{
    uint32_t minors[64];
    size_t n = 0;
    struct bpf_insn prog[8 + 64 + 4];
    if (parse_gpus(gpus, minors, 64, &n) != 0) {
        snprintf(note, cap, "devices: not isolated: GPUs '%.32s' are not local indices", gpus);
        return -1;
    }
    size_t len = cg_dev_program(minors, n, prog, sizeof(prog) / sizeof(prog[0]));
    char log[1024] = "";
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (uint64_t)(uintptr_t)prog;
    attr.insn_cnt = (uint32_t)len;
    attr.license = (uint64_t)(uintptr_t) "GPL";
    attr.log_buf = (uint64_t)(uintptr_t)log;
    attr.log_size = sizeof(log);
    attr.log_level = 1;
    int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0) {
        int e = errno;
        log[strcspn(log, "\n")] = '\0';
        snprintf(note, cap, "devices: not isolated: bpf program load: %s%s%.80s", strerror(e),
                 log[0] ? ": " : "", log);
        return -1;
    }
    int cg = open(leaf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0) {
        snprintf(note, cap, "devices: not isolated: open '%.80s': %s", leaf, strerror(errno));
        close(fd);
        return -1;
    }
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (uint32_t)cg;
    attr.attach_bpf_fd = (uint32_t)fd;
    attr.attach_type = BPF_CGROUP_DEVICE;
    int rc = (int)sys_bpf(BPF_PROG_ATTACH, &attr);
    int e = errno;
    close(cg);
    close(fd); /* the attachment holds the program while the cgroup lives */
    if (rc != 0) {
        snprintf(note, cap, "devices: not isolated: bpf attach: %s", strerror(e));
        return -1;
    }
    snprintf(note, cap, "devices: NVIDIA GPUs %s only (BPF)", n ? gpus : "none");
    return 0;
}
