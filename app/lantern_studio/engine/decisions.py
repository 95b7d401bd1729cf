"""How each image token was decided: the ids the decode loop records per token
(a verification marks each accepted draft, ``engine.verification``) and the
studio colours its overlay by.

Plain ints and no imports, so the GUI can name decisions without the tensor
code (docs/architecture.md).
"""

BY_TARGET = 0  # sampled by the target (vanilla step, correction or bonus token)
ACCEPTED_EXACT = 1  # drafted, accepted by the exact rule
ACCEPTED_RELAXED = 2  # drafted, accepted only thanks to LANTERN's relaxation
DECISION_NAMES = {BY_TARGET: "target", ACCEPTED_EXACT: "exact", ACCEPTED_RELAXED: "relaxed"}
