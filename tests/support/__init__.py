"""Helpers shared by test modules (not tests themselves): tiny models, the fake Hub,
the studio driver, the lossless-decoding statistics, fabricated emoji packages."""
