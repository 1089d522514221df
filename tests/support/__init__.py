"""Helpers the tests share: listing pieces, float references, the mutation fuzzer's parts, and
the functions worker processes run by name. Test modules import from here, never from one
another."""
