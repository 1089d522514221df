"""warpboard translator."""
