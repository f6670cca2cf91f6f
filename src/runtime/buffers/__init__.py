"""Replay buffers for off-policy learning."""

from runtime.buffers.replay_buffer import ReplayBuffer

__all__ = ["ReplayBuffer"]
