# Runs argv under a seccomp filter that refuses namespaces to it and everything it starts:
# unshare(2) and setns(2) fail EPERM, clone(2) with a CLONE_NEW* flag fails EPERM, clone3(2)
# fails ENOSYS (libc falls back to clone). For the sandbox_unavailable tests (x86_64, aarch64).
import ctypes, os, platform, struct, sys

arch = platform.machine()
if arch == 'x86_64':
    AUDIT = 0xc000003e; NR = dict(unshare=272, setns=308, clone=56, clone3=435)
elif arch == 'aarch64':
    AUDIT = 0xc00000b7; NR = dict(unshare=97, setns=268, clone=220, clone3=435)
else:
    sys.exit('no-namespaces: unsupported arch %s' % arch)
CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, ERRNO = 0x7fff0000, 0x00050000
def stmt(code, k): return struct.pack('HBBI', code, 0, 0, k)
def jump(code, k, jt, jf): return struct.pack('HBBI', code, jt, jf, k)
prog = [
    stmt(LD, 4), jump(JEQ, AUDIT, 1, 0), stmt(RET, ALLOW),
    stmt(LD, 0),
    jump(JEQ, NR['unshare'], 0, 1), stmt(RET, ERRNO | 1),
    jump(JEQ, NR['setns'], 0, 1), stmt(RET, ERRNO | 1),
    jump(JEQ, NR['clone3'], 0, 1), stmt(RET, ERRNO | 38),
    jump(JEQ, NR['clone'], 0, 3), stmt(LD, 16), jump(JSET, CLONE_NEW, 0, 1), stmt(RET, ERRNO | 1),
    stmt(RET, ALLOW),
]
class Fprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_char_p)]
fprog = Fprog(len(prog), b''.join(prog))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:
    sys.exit('no-namespaces: PR_SET_NO_NEW_PRIVS failed')
if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit('no-namespaces: PR_SET_SECCOMP failed: errno %d' % ctypes.get_errno())
os.execvp(sys.argv[1], sys.argv[1:])
