"""ic_get_device_allocator (inductor_c/ic_device.h): the registered device allocator can be
read and put back, so a test that registers its own for a while leaves torchc's (PyTorch's
caching allocator, registered when torchc._C loads) to the tests after it. Runs everywhere:
registering touches no device."""
import ctypes
from ctypes import CFUNCTYPE, POINTER, Structure, c_int, c_size_t, c_void_p

import pytest

import torchc

ALLOC_FN = CFUNCTYPE(c_void_p, c_size_t, c_int, c_void_p, POINTER(c_void_p))
RELEASE_FN = CFUNCTYPE(None, c_void_p)


class Allocator(Structure):
    _fields_ = [("alloc", ALLOC_FN), ("release", RELEASE_FN)]


LIB = ctypes.CDLL(torchc._C.__file__)
LIB.ic_set_device_allocator.argtypes = [POINTER(Allocator)]
LIB.ic_set_device_allocator.restype = None
LIB.ic_get_device_allocator.argtypes = [POINTER(Allocator)]
LIB.ic_get_device_allocator.restype = c_int


def _ptrs(a):
    return ctypes.cast(a.alloc, c_void_p).value, ctypes.cast(a.release, c_void_p).value


@pytest.mark.needs_no_compiler
def test_get_and_restore_the_allocator():
    orig = Allocator()
    assert LIB.ic_get_device_allocator(ctypes.byref(orig)) == 1  # torchc's, from module init
    assert all(_ptrs(orig))
    mine = Allocator(ALLOC_FN(lambda n, dev, stream, handle: None), RELEASE_FN(lambda h: None))
    try:
        LIB.ic_set_device_allocator(ctypes.byref(mine))
        now = Allocator()
        assert LIB.ic_get_device_allocator(ctypes.byref(now)) == 1 and _ptrs(now) == _ptrs(mine)
        LIB.ic_set_device_allocator(None)
        assert LIB.ic_get_device_allocator(ctypes.byref(now)) == 0
        assert LIB.ic_get_device_allocator(None) == 0
    finally:
        LIB.ic_set_device_allocator(ctypes.byref(orig))
    now = Allocator()
    assert LIB.ic_get_device_allocator(ctypes.byref(now)) == 1 and _ptrs(now) == _ptrs(orig)
