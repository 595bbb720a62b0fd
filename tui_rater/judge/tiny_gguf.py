"""Write a deterministic random-weight GGUF (llama architecture, byte-level BPE vocabulary).

For tests and benchmarks: a real model file that real llama.cpp loads and runs, made on the
spot, so nothing is downloaded. Its replies are gibberish, but every code path -- tokenizing,
prefix caching, sampling, grammars, logits -- is llama.cpp's own. Needs the ``gguf`` package
(the ``test`` and ``bench`` extras).

    python -m tui_rater.judge.tiny_gguf out.gguf [--embd 64 --layers 2 --ff 128 --seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2's reversible byte -> printable character map (what a "gpt2" BPE vocabulary uses)
    printable = (
        list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(printable, (chr(c) for c in chars)))


# a couple of merges so the BPE machinery is exercised ("Ġ" is GPT-2's space)
MERGES = ["Ġ t", "t h", "Ġ a", "i n", "e r", "Ġt h"]


def write_tiny_gguf(
    path: str | Path,
    *,
    n_embd: int = 64,
    n_layers: int = 2,
    n_ff: int = 128,
    n_head: int = 4,
    n_ctx: int = 4096,
    seed: int = 0,
    chat_template: str | None = None,
    eos_logit: float = 0.0,
) -> Path:
    """``eos_logit`` > 0 raises end-of-text's logit at every position (2.5: the most probable token
    at the answer position of the story prompts, p about 0.3): a model that wants to stop there
    (issue 13, item 4). 0 writes the same file as before the option existed."""
    import gguf

    path = Path(path)
    rng = np.random.default_rng(seed)
    byte_chars = _bytes_to_unicode()
    tokens = [byte_chars[b] for b in range(256)]
    tokens += ["".join(m.split(" ")) for m in MERGES]
    tokens += ["<s>", "</s>"]
    token_types = [gguf.TokenType.NORMAL] * (len(tokens) - 2) + [gguf.TokenType.CONTROL] * 2
    n_vocab = len(tokens)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tui-rater tiny random llama")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(n_vocab - 2)
    writer.add_eos_token_id(n_vocab - 1)
    writer.add_add_bos_token(True)
    if chat_template:
        writer.add_chat_template(chat_template)

    def tensor(name: str, *shape: int, scale: float = 0.02) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def ones(name: str) -> None:
        writer.add_tensor(name, np.ones(n_embd, dtype=np.float32))

    # numpy shapes are ggml's dimensions reversed
    embedding = rng.standard_normal((n_vocab, n_embd)).astype(np.float32)
    if eos_logit:  # one constant dimension in every token's embedding survives the (small) layers
        embedding[:, 0] = 4.0
    writer.add_tensor("token_embd.weight", embedding)
    for i in range(n_layers):
        ones(f"blk.{i}.attn_norm.weight")
        for proj in ("q", "k", "v", "output"):
            tensor(f"blk.{i}.attn_{proj}.weight", n_embd, n_embd)
        ones(f"blk.{i}.ffn_norm.weight")
        tensor(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    ones("output_norm.weight")
    output = (rng.standard_normal((n_vocab, n_embd)) * 0.5).astype(np.float32)
    if eos_logit:  # only end-of-text reads the constant dimension
        output[:, 0] = 0.0
        output[n_vocab - 1, 0] = eos_logit
    writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--embd", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ff", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eos-logit", type=float, default=0.0, help="make end-of-text the likely next token")
    args = parser.parse_args()
    write_tiny_gguf(
        args.out,
        n_embd=args.embd,
        n_layers=args.layers,
        n_ff=args.ff,
        n_head=args.heads,
        seed=args.seed,
        eos_logit=args.eos_logit,
    )
    print(args.out)


if __name__ == "__main__":
    main()
