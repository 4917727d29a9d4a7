"""Any kernel from its code: a user's numba.cuda kernel compiled without a GPU
(``toolchain``), its PTX parsed (``ptx``) and run warp by warp on the CPU (``emulator``)."""
