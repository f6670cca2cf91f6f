"""Experience collection: rollout workers, worker sets, the step loop over sub-envs, episodes,
envs and their registry, observation preprocessors and filters."""

from runtime.env.external_env import ExternalEnv, ExternalMultiAgentEnv
from runtime.env.policy_client import PolicyClient
from runtime.env.policy_server_input import PolicyServerInput

__all__ = ["ExternalEnv", "ExternalMultiAgentEnv", "PolicyClient", "PolicyServerInput"]
