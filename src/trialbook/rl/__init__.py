"""Training-time rollouts: `rollout` (every rollout a graded, recorded trial), `rewards` (the reward
policy table), `trainers` (thin adapters for TRL, SkyRL and AReaL)."""
