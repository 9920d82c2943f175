"""An op whose backward is wrong only inside the cross-check's Keras workers, so the keras
rows, and only they, must fail on it."""

import sys

import crossgrad as cg

_SCALE = 3.0 if sys.argv[0].endswith("keras_worker.py") else 2.0

cg.register(cg.OpDef(
    "keras_planted_square", lambda xp, x: (x * x, (x,)),
    lambda xp, residuals, g: (_SCALE * residuals[0] * g,),
    sample=lambda rng: (rng.standard_normal((3, 2)),)))
