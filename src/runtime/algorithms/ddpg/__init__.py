"""DDPG and TD3: ``ddpg.py`` the algorithm, ``td3.py`` TD3 (DDPG with TD3's defaults),
``module.py`` the actor and critics, ``learner.py`` the learner (two optimizers, delayed actor
updates), ``loss.py`` the losses."""

from runtime.algorithms.ddpg.ddpg import DDPG
from runtime.algorithms.ddpg.learner import DDPGLearner
from runtime.algorithms.ddpg.loss import ddpg_loss
from runtime.algorithms.ddpg.module import DDPGModule
from runtime.algorithms.ddpg.td3 import TD3

__all__ = ["DDPG", "TD3", "DDPGLearner", "DDPGModule", "ddpg_loss"]
