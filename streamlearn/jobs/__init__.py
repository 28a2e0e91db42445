"""The jobs behind the commands: each wires sources, parser, learner and checkpoints."""
