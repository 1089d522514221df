"""warpboard harness."""
