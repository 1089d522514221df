"""Decoded programs: instructions against the opcode table, basic blocks, reachability and
modes (program); the lane order and its abstract lane values (order, lane_values); the turn
key (turnkey)."""
