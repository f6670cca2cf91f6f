"""Replay buffers for off-policy learning."""

from runtime.buffers.factory import make_replay_buffer
from runtime.buffers.prioritized_replay_buffer import PrioritizedReplayBuffer
from runtime.buffers.replay_buffer import ReplayBuffer
from runtime.buffers.sum_tree import SumMinTree

__all__ = ["PrioritizedReplayBuffer", "ReplayBuffer", "SumMinTree", "make_replay_buffer"]
