// libtilefuse.so is made of the tf_api archive (whole) and what it uses; a
// shared library target needs at least one source of its own.
