"""What each control does, in the words the tooltips use."""

PROMPT = ("What to draw. Enter generates, Shift+Enter starts a new line. For text-conditioned models this is free text "
          "(at most 1000 characters); class-conditioned models take a class name or #id.")
HISTORY = "Recent prompts: pick one to put it back in the prompt box."
SEED = "Random seed. The same seed, settings and device give the same image."
DICE = "Pick a random seed."
NEW_SEED = ("On: every Generate (and Compare) draws a fresh random seed, so each press gives a new picture; the "
            "seed used shows in the box and goes into the image's record.\nOff: Generate keeps the seed in the box, "
            "so the same settings draw the same picture again. Clicking a history image turns this off.")
COPY_SEED = "Copy the seed to the clipboard."
MODEL = ("Which model generates: the bundled model, a model folder you opened, or the tiny demo "
         "model (random weights: noise, but it shows how decoding works).")
DRAFTER = ("Who proposes draft tokens for the target model to verify in one forward pass.\n"
           "• EAGLE: a small learned head on the target's features (best acceptance; only for models that ship one).\n"
           "• Jacobi: training-free self-drafting from the target's own previous predictions.\n"
           "• none: plain autoregressive decoding, one target forward per token (the baseline).")
DRAFT_LENGTH = "How many tokens the drafter proposes per step (1–64). Longer drafts help only when most are accepted."
K = ("k — LANTERN's neighbour count. A drafted token may also be accepted with the target probability of "
     "its k nearest codebook neighbours in latent space (nearest first, within the δ or λ budget).\n"
     "k = 0: exact (lossless) speculative decoding. The slider is logarithmic so both small and large k are reachable; "
     "type an exact value in the box.")
DELTA = ("δ — how much probability LANTERN may move to a drafted token's look-alikes, for each token (0 to 1). "
         "When the target checks a drafted token, the chances of up to k of its nearest codebook neighbours (the "
         "nearest first, as long as their total stays within δ) count as if they were the drafted token's own, so "
         "an almost-right guess is kept more often.\n\n"
         "What δ guarantees, exactly:\n"
         "• Deterministic drafts (Greedy on, or any drafter that picks its guess without sampling): each step's "
         "output stays within δ of the target's own in total variation: no outcome of the step gains or loses "
         "more than δ of probability.\n"
         "• Sampled drafts (the drafters here sample unless Greedy is on): the bound holds per token only — no "
         "token becomes likelier than its own chance plus the share moved to it — but a whole step can exceed δ "
         "(it can move further than δ from the target).\n"
         "For a guarantee per step with sampled drafts, choose the step bound.\n"
         "k = 0 or δ = 0 is exact (lossless) speculative decoding. The slider has fine steps near 0.")
DELTA_STEP = ("δ — the step bound's budget (0 to 1). Before each drafted token is checked, up to δ of the target's "
              "probability is moved between look-alike tokens (each token gives only to its k nearest codebook "
              "neighbours), toward what the drafter proposes; the exact check then runs against that moved "
              "distribution.\n\n"
              "What δ guarantees, exactly: each step's output stays within δ of the target's own in total "
              "variation, for sampled and deterministic drafts alike. Over an image the steps add up: an image of "
              "N tokens is at most N times δ from the target's in total variation.\n"
              "k = 0 or δ = 0 is exact (lossless) speculative decoding. The slider has fine steps near 0.")
BOUND = ("Which relaxation, and what δ promises:\n"
         "• LANTERN: a draft also wins the probability of its nearest neighbours, up to δ; the bound holds per token "
         "(a step's total variation can exceed δ when drafts are sampled).\n"
         "• LANTERN++: the neighbourhood is bounded by (λ − 1)·p(x̃) instead of δ.\n"
         "• Step-bounded: each step's output is within δ of the target in total variation, sampled drafts too.")
ADAPTIVE = ("Entropy-adaptive δ: each token's budget is δ·H(p)/log V (the target's normalised entropy), never above δ — "
            "relaxation where the target is unsure, none where it is certain.")
DELTA_DECAY = ("δ tightens along each draft chain: the first drafted token of a verification gets δ, the next "
               "δ×this, then δ×this², … — later drafts, which build on earlier relaxed ones, are held closer to the "
               "target, and one verification moves at most δ/(1 − this) in all. 1 = the same δ for every draft.")
LAMBDA_MODE = ("LANTERN++: bound the neighbourhood relative to the draft's own probability, m(x̃) ≤ (λ − 1)·p(x̃), "
               "instead of by the absolute budget δ.")
LAMBDA = "λ ≥ 1 for LANTERN++. λ = 1 accepts no neighbour mass (exact); larger λ relaxes more."
TEMPERATURE = "Sampling temperature (> 0). Lower is more conservative, higher more varied. Not used when Greedy is on."
GREEDY = "Always take the most likely token (deterministic drafts and output). Disables temperature."
TOP_K = "Sample only among the k most likely tokens (0 = off)."
TOP_P = "Nucleus sampling: sample among the most likely tokens whose total probability reaches p (1 = off)."
CFG = ("Classifier-free guidance scale: how strongly the image follows the prompt (1 = no guidance; "
       "values above 1 cost a second batch row per forward).")
GENERATE = "Generate an image (Enter in the prompt box; Ctrl+Enter anywhere in the window). While a job runs, new ones wait in the queue."
VARIATIONS = ("Generate ×4: four variations of the prompt and settings, each with a new seed of its own, side by "
              "side in a 2×2 grid that fills in as they decode; click one to make it the current picture. Esc "
              "stops the rest. Key: Ctrl+4")
COMPARE = ("Run vanilla decoding (drafter none) and the current settings with the same prompt, seed and sampling, "
           "then show both images, their times and the measured speed-up.")
RESET = "Restore the model's default settings."
OVERLAY = "Colour each token cell by how it was decided: sampled by the target, drafted and accepted exactly, or accepted by LANTERN's relaxation."
ZOOM = "Image zoom: fit the view, or an integer scale with crisp (nearest-neighbour) pixels."
