"""Runs a command as on a host without IPv6: every socket(AF_INET6, ...) fails with EAFNOSUPPORT,
as it does under a Linux kernel started with ipv6.disable=1. A network namespace cannot be made
without IPv6 (disable_ipv6 leaves `::` bindable), so a seccomp filter (Linux's
Documentation/userspace-api/seccomp_filter.rst) refuses the call instead: it needs no privilege
(PR_SET_NO_NEW_PRIVS), and the command runs unchanged in every other way.

    python3 test/helpers/without-ipv6.py COMMAND [ARG...]

Exits 3 with a line on stderr where the filter cannot be installed (not Linux, another
architecture, seccomp unavailable): the caller skips its test.
"""

import ctypes
import os
import platform
import struct
import sys

# Per architecture: the AUDIT_ARCH_* value seccomp reports, and the socket system call's number.
ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
AF_INET6 = 10
EAFNOSUPPORT = 97

# Classic BPF (linux/filter.h, linux/seccomp.h).
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
NR, ARCH, ARG0 = 0, 4, 16
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


def unavailable(why):
    sys.stderr.write("without-ipv6: %s\n" % why)
    sys.exit(3)


def instruction(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main():
    if len(sys.argv) < 2:
        unavailable("usage: without-ipv6.py COMMAND [ARG...]")
    if sys.platform != "linux" or platform.machine() not in ARCHES or sys.byteorder != "little":
        unavailable("needs Linux on %s (this is %s on %s)" % (" or ".join(ARCHES), sys.platform, platform.machine()))
    arch, socket_nr = ARCHES[platform.machine()]
    program = b"".join(
        [
            instruction(BPF_LD_W_ABS, 0, 0, ARCH),
            instruction(BPF_JEQ_K, 0, 5, arch),  # another ABI: allowed
            instruction(BPF_LD_W_ABS, 0, 0, NR),
            instruction(BPF_JEQ_K, 0, 3, socket_nr),
            instruction(BPF_LD_W_ABS, 0, 0, ARG0),  # the domain (the low half on little-endian)
            instruction(BPF_JEQ_K, 0, 1, AF_INET6),
            instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
            instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        ]
    )
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        unavailable("prctl(PR_SET_NO_NEW_PRIVS): %s" % os.strerror(ctypes.get_errno()))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        unavailable("prctl(PR_SET_SECCOMP): %s" % os.strerror(ctypes.get_errno()))
    os.execvp(sys.argv[1], sys.argv[1:])


main()
