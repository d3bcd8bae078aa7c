# Writes an nvidia-smi --query-gpu CSV (host-prefixed, as pdsh prints it)
# of at least `mib` MiB for examples/good-64.yaml's 64 GPUs: the same 64
# healthy rows over and over, then one last row with a double-bit ECC error
# on sn01-t03 gpu7. Used by tests/cli/health_stream.sh:
#   awk -v mib=270 -f tests/data/health/stream/smi_rows.awk
BEGIN {
    print "timestamp, index, uuid, name, temperature.gpu, power.draw [W], utilization.gpu [%], clocks.sm [MHz], memory.used [MiB], ecc.errors.uncorrected.volatile.total"
    for (h = 0; h < 8; h++)
        for (g = 0; g < 8; g++)
            block = block sprintf("sn0%d-t0%d: 2024/05/01 12:00:00.000, %d, GPU-5f1c0a6e-8f3d-4b0e-9a7e-0000000000%d%d, NVIDIA H100 80GB HBM3, %d, 688.00 W, 100 %%, 1980 MHz, 70000 MiB, 0\n", int(h/4), h%4, g, h, g, 60 + g)
    n = int(mib * 1048576 / length(block)) + 1
    for (k = 0; k < n; k++)
        printf "%s", block
    print "sn01-t03: 2024/05/01 12:00:01.000, 7, GPU-5f1c0a6e-8f3d-4b0e-9a7e-000000000077, NVIDIA H100 80GB HBM3, 67, 688.00 W, 100 %, 1980 MHz, 70000 MiB, 1"
}
