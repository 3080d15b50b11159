"""How far the sampler's next-token log-probabilities are from the trainer's forward, with the
decode step's merged bf16 copies and with the model's own modules.

Loads a pretrained model (SmolLM2-135M-Instruct by default) in bf16 with the LoRA that
``export-config --model`` suggests for a GPU (r16 on every projection, float32 adapters, as
peft makes them) and gives its adapters random weights of scale ``--sigmas`` (0: untrained).
For ``--prompts`` prompts of the built-in task it takes the model's own forward (the trainer's
log-probabilities) over each prompt and its most likely next token, and the sampler's prefill
of the prompt and decode step of that token
(:class:`engine.generation.decoder.StaticDecoder`), once through the merged copies
(:mod:`engine.generation.decode_weights`: ``W + scaling * B @ A`` rounded to bf16) and once
through each adapted module (bf16 base product plus the float32 adapter's). Reports, per scale,
the expected absolute difference of the decode step's log-probabilities under the forward's
distribution, ``E_p |log q - log p|``: what ``gen/logprob_gap`` averages over sampled tokens.

    python bench/sampler_gap.py --device cpu

Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json

import studio_run  # noqa: F401  (puts the repository on sys.path)
import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--sigmas", default="0,0.001,0.01", help="adapter B weights' scales")
    args = parser.parse_args()

    from engine.config.pretrained import suggested_config
    from engine.data.datasets import load_rows
    from engine.data.prompts import for_trainer
    from engine.generation.cache import StaticKVCache
    from engine.generation.decode_weights import build_decode_weights
    from engine.generation.decoder import StaticDecoder
    from engine.models.loading import load_model_and_tokenizer

    torch.manual_seed(0)
    device = torch.device(args.device)
    config = suggested_config(args.model, on_gpu=True)
    model, tokenizer = load_model_and_tokenizer(config.model, device=str(device))
    model.to(torch.bfloat16).eval()
    adapters = [p for name, p in model.named_parameters() if "lora_" in name]
    for param in adapters:  # peft keeps adapters in float32 beside a bf16 base
        param.data = param.data.float()
    rows = for_trainer(tokenizer, load_rows(config.data))[: args.prompts]
    encoded = tokenizer.apply_chat_template(
        [r["prompt"] for r in rows], add_generation_prompt=True, tokenize=True, return_dict=True
    )["input_ids"]
    n, width = len(encoded), max(len(ids) for ids in encoded)
    ids = torch.zeros(n, width, dtype=torch.long)
    valid = torch.zeros(n, width, dtype=torch.bool)
    for row, prompt in enumerate(encoded):  # left padding, as the sampler pads
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        valid[row, width - len(prompt) :] = True
    ids, valid, rows_at = ids.to(device), valid.to(device), torch.arange(n, device=device)

    report: dict = {"model": args.model, "device": str(device), "prompts": n}
    for sigma in (float(s) for s in args.sigmas.split(",")):
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "lora_B" in name:
                    param.normal_(0, sigma)
            mask = valid.long()
            first = model(input_ids=ids, attention_mask=mask).logits[:, -1].argmax(-1)
            longer = torch.cat([ids, first[:, None]], dim=1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
            forward = model(input_ids=longer, attention_mask=mask).logits[:, -1].float()
            reference = forward.log_softmax(-1)
            decoder = StaticDecoder(model)
            merged = build_decode_weights(decoder.body.layers)
            s = decoder.shape
            for label, weights in (("merged", merged), ("modules", None)):
                decoder.weights = weights
                cache = StaticKVCache(
                    s.num_layers, n, s.kv_heads, width + 1, s.head_dim, torch.bfloat16, device
                )
                decoder.prefill(cache, ids, valid, rows_at, rows_at)
                cached = torch.zeros(n, width + 1, dtype=torch.bool, device=device)
                cached[:, :width] = valid
                positions = valid.sum(-1)
                slot = torch.tensor([width], device=device)
                logits = decoder.decode(cache, first, positions, slot, cached).float()
                gap = (logits.log_softmax(-1) - reference).abs() * reference.exp()
                report[f"gap_{label}_sigma_{sigma:g}"] = round(gap.sum(-1).mean().item(), 4)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
