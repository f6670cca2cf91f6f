"""The parts of an ``Algorithm``: the Trainable protocol, training steps on on- and off-policy
bases, evaluation scheduling, checkpoints, and the refusal of settings without an effect."""
