"""warpboard reports."""
