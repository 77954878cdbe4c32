#!/usr/bin/env python3
"""Writes dgx_like.xml: a hand-described hwloc v2 topology shaped like an 8-GPU HGX/DGX node.

Kept as a script (not only the XML) so the fixture can be read and changed with intent:
the unit tests' expected rankfiles are reasoned from the layout below, not from program output.

Layout
  2 packages x 2 NUMA nodes x 12 cores x 2 hardware threads = 48 cores, 96 PUs.
  Core c (0..47) has PUs c and c+48 (Linux numbering on Intel/AMD servers).
  NUMA n holds cores 12n..12n+11; package p holds NUMA 2p and 2p+1.
  Each NUMA node has one host bridge with two PCIe switches; each switch carries one
  NVIDIA H200 (class 0302, 10de:2335) and one ConnectX-7 InfiniBand HCA (class 0207, 15b3:1021)
  exposed as OS devices mlx5_<i> (OpenFabrics) and ib<i> (network).
    NUMA 0: GPU 0000:18:00.0 + mlx5_0 0000:17:00.0 ; GPU 0000:2a:00.0 + mlx5_1 0000:29:00.0
    NUMA 1: GPU 0000:3a:00.0 + mlx5_2 0000:39:00.0 ; GPU 0000:5d:00.0 + mlx5_3 0000:5c:00.0
    NUMA 2: GPU 0000:9a:00.0 + mlx5_4 0000:99:00.0 ; GPU 0000:ab:00.0 + mlx5_5 0000:aa:00.0
    NUMA 3: GPU 0000:ba:00.0 + mlx5_6 0000:b9:00.0 ; GPU 0000:db:00.0 + mlx5_7 0000:da:00.0
  NUMA 0 also has an Ethernet port eno1 (0000:10:03.0) and an NVSwitch-like device
  (0000:10:04.0, class 0680, vendor 10de) that must NOT be taken for a GPU.

Usage: python3 make_dgx_like.py > dgx_like.xml ; check with: lstopo --input dgx_like.xml
"""

PACKAGES = 2
NUMA_PER_PACKAGE = 2
CORES_PER_NUMA = 12
THREADS = 2
CORES = PACKAGES * NUMA_PER_PACKAGE * CORES_PER_NUMA
NUMA_MEMORY = 512 * 1024**3

# (host bridge bus range, [(switch bridge busid, switch bus range, nic bus, gpu bus)])
PCI = [
    ((0x10, 0x2F), [("0000:10:01.0", (0x11, 0x1F), 0x17, 0x18), ("0000:10:02.0", (0x20, 0x2F), 0x29, 0x2A)]),
    ((0x30, 0x5F), [("0000:30:01.0", (0x31, 0x3F), 0x39, 0x3A), ("0000:30:02.0", (0x40, 0x5F), 0x5C, 0x5D)]),
    ((0x80, 0xAF), [("0000:80:01.0", (0x81, 0x9F), 0x99, 0x9A), ("0000:80:02.0", (0xA0, 0xAF), 0xAA, 0xAB)]),
    ((0xB0, 0xEF), [("0000:b0:01.0", (0xB1, 0xCF), 0xB9, 0xBA), ("0000:b0:02.0", (0xD0, 0xEF), 0xDA, 0xDB)]),
]


def bitmap(bits):
    """hwloc's bitmap string: 32-bit hex words, most significant first."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if value == 0:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

    def next_gp(self):
        self.gp += 1
        return self.gp

    def emit(self, depth, text):
        self.lines.append("  " * depth + text)


def sets(pus, numas):
    c, n = bitmap(pus), bitmap(numas)
    return f'cpuset="{c}" complete_cpuset="{c}" nodeset="{n}" complete_nodeset="{n}"'


def core_pus(core):
    return [core + t * CORES for t in range(THREADS)]


def write_pci(w, d, numa, nic_counter):
    (lo, hi), switches = PCI[numa]
    w.emit(d, f'<object type="Bridge" gp_index="{w.next_gp()}" bridge_type="0-1" depth="0" '
              f'bridge_pci="0000:[{lo:02x}-{hi:02x}]">')
    for busid, (slo, shi), nic_bus, gpu_bus in switches:
        w.emit(d + 1, f'<object type="Bridge" gp_index="{w.next_gp()}" bridge_type="1-1" depth="1" '
                      f'bridge_pci="0000:[{slo:02x}-{shi:02x}]" pci_busid="{busid}" '
                      f'pci_type="0604 [1000:c030] [1000:a064] b0" pci_link_speed="31.507692">')
        i = nic_counter[0]
        nic_counter[0] += 1
        w.emit(d + 2, f'<object type="PCIDev" gp_index="{w.next_gp()}" pci_busid="0000:{nic_bus:02x}:00.0" '
                      f'pci_type="0207 [15b3:1021] [15b3:0041] 00" pci_link_speed="31.507692">')
        w.emit(d + 3, f'<object type="OSDev" gp_index="{w.next_gp()}" name="ib{i}" osdev_type="2">')
        w.emit(d + 4, '<info name="Address" value="00:00:10:29:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:aa:bb:%02x"/>' % i)
        w.emit(d + 3, "</object>")
        w.emit(d + 3, f'<object type="OSDev" gp_index="{w.next_gp()}" name="mlx5_{i}" osdev_type="3">')
        w.emit(d + 4, '<info name="NodeGUID" value="b83f:d203:00aa:bb%02x"/>' % i)
        w.emit(d + 4, '<info name="Port1State" value="4"/>')
        w.emit(d + 4, '<info name="Port1LID" value="0x%x"/>' % (0x10 + i))
        w.emit(d + 3, "</object>")
        w.emit(d + 2, "</object>")
        w.emit(d + 2, f'<object type="PCIDev" gp_index="{w.next_gp()}" pci_busid="0000:{gpu_bus:02x}:00.0" '
                      f'pci_type="0302 [10de:2335] [10de:18be] a1" pci_link_speed="31.507692"/>')
        w.emit(d + 1, "</object>")
    if numa == 0:
        w.emit(d + 1, f'<object type="PCIDev" gp_index="{w.next_gp()}" pci_busid="0000:10:03.0" '
                      f'pci_type="0200 [8086:1572] [8086:0000] 02" pci_link_speed="7.876923">')
        w.emit(d + 2, f'<object type="OSDev" gp_index="{w.next_gp()}" name="eno1" osdev_type="2">')
        w.emit(d + 3, '<info name="Address" value="3c:ec:ef:00:00:01"/>')
        w.emit(d + 2, "</object>")
        w.emit(d + 1, "</object>")
        w.emit(d + 1, f'<object type="PCIDev" gp_index="{w.next_gp()}" pci_busid="0000:10:04.0" '
                      f'pci_type="0680 [10de:22a3] [10de:1796] a1" pci_link_speed="0.000000"/>')
    w.emit(d, "</object>")


def main():
    w = Writer()
    all_pus = [p for c in range(CORES) for p in core_pus(c)]
    all_numa = list(range(PACKAGES * NUMA_PER_PACKAGE))
    w.emit(0, '<?xml version="1.0" encoding="UTF-8"?>')
    w.emit(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    w.emit(0, '<topology version="2.0">')
    c, n = bitmap(all_pus), bitmap(all_numa)
    w.emit(1, f'<object type="Machine" os_index="0" {sets(all_pus, all_numa)} allowed_cpuset="{c}" '
              f'allowed_nodeset="{n}" gp_index="{w.next_gp()}">')
    w.emit(2, '<info name="Backend" value="Linux"/>')
    w.emit(2, '<info name="OSName" value="Linux"/>')
    w.emit(2, '<info name="HostName" value="dgx-like"/>')
    w.emit(2, '<info name="Architecture" value="x86_64"/>')
    w.emit(2, '<info name="hwlocVersion" value="2.9.0"/>')
    nic_counter = [0]
    for p in range(PACKAGES):
        numas = [p * NUMA_PER_PACKAGE + k for k in range(NUMA_PER_PACKAGE)]
        p_cores = [c for nn in numas for c in range(nn * CORES_PER_NUMA, (nn + 1) * CORES_PER_NUMA)]
        p_pus = sorted(pu for c in p_cores for pu in core_pus(c))
        w.emit(2, f'<object type="Package" os_index="{p}" {sets(p_pus, numas)} gp_index="{w.next_gp()}">')
        w.emit(3, '<info name="CPUVendor" value="GenuineIntel"/>')
        w.emit(3, '<info name="CPUModel" value="Intel(R) Xeon(R) Platinum 8480C"/>')
        for nn in numas:
            cores = list(range(nn * CORES_PER_NUMA, (nn + 1) * CORES_PER_NUMA))
            pus = sorted(pu for c in cores for pu in core_pus(c))
            w.emit(3, f'<object type="Group" {sets(pus, [nn])} gp_index="{w.next_gp()}" kind="1001" subkind="0">')
            w.emit(4, f'<object type="NUMANode" os_index="{nn}" {sets(pus, [nn])} gp_index="{w.next_gp()}" '
                      f'local_memory="{NUMA_MEMORY}">')
            w.emit(5, '<page_type size="4096" count="%d"/>' % (NUMA_MEMORY // 4096))
            w.emit(4, "</object>")
            for core in cores:
                w.emit(4, f'<object type="Core" os_index="{core}" {sets(core_pus(core), [nn])} gp_index="{w.next_gp()}">')
                for pu in core_pus(core):
                    w.emit(5, f'<object type="PU" os_index="{pu}" {sets([pu], [nn])} gp_index="{w.next_gp()}"/>')
                w.emit(4, "</object>")
            write_pci(w, 4, nn, nic_counter)
            w.emit(3, "</object>")
        w.emit(2, "</object>")
    w.emit(1, "</object>")
    w.emit(0, "</topology>")
    print("\n".join(w.lines))


if __name__ == "__main__":
    main()
