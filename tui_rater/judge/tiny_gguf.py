"""Write a deterministic random-weight GGUF (llama architecture) that real llama.cpp loads and runs.

For tests and benchmarks: a real model file made on the spot, so nothing is downloaded. Its replies are gibberish,
but every code path -- tokenizing, prefix caching, batching, sampling, grammars, logits -- is llama.cpp's own. Two
vocabularies:

- a byte-level BPE vocabulary of 264 tokens (the default: a story prompt is ~1,100 tokens);
- a real one, read from a vocabulary-only GGUF (``vocab=``; ``tests/data/vocab/ggml-vocab-qwen2.gguf`` is Qwen2's
  151,936-token BPE), so prompts are tokenized as a real instruct model tokenizes them (~300-token story prompts),
  and the logits span a real vocabulary's size. ``add_bos`` (default on, as in Llama 3 and Gemma GGUFs) makes
  llama.cpp want a BOS token; ``BOS_TEMPLATE`` is a chat template that emits one itself, as most instruct GGUFs' do.

Needs the ``gguf`` package (the ``test`` and ``bench`` extras).

    python -m tui_rater.judge.tiny_gguf out.gguf [--embd 64 --layers 2 --ff 128 --seed 0]
    python -m tui_rater.judge.tiny_gguf out.gguf --vocab tests/data/vocab/ggml-vocab-qwen2.gguf --template bos
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import gguf

# a Llama-3-style template in ChatML words, beginning with {{ bos_token }} (bench-tools/make_model.py --bos-template)
BOS_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' "
    "+ message['content'] | trim + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


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

# GGUF value types (gguf.GGUFValueType): scalars by struct format; 8 = string, 9 = array
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32, 6: np.float32, 7: np.bool_}


def read_vocab(path: str | Path) -> dict[str, object]:
    """The key-value metadata of a GGUF file (a vocabulary-only GGUF has nothing else).

    ``gguf.GGUFReader`` takes ~12 s on Qwen2's 300k strings; this reads them in a fraction of a second.
    """
    data = memoryview(Path(path).read_bytes())
    if bytes(data[:4]) != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    _version, _tensors, n_kv = struct.unpack_from("<IQQ", data, 4)
    offset = 24

    def string(at: int) -> tuple[str, int]:
        (n,) = struct.unpack_from("<Q", data, at)
        return bytes(data[at + 8 : at + 8 + n]).decode("utf-8"), at + 8 + n

    def value(kind: int, at: int) -> tuple[object, int]:
        if kind == 8:
            return string(at)
        if kind == 9:
            item, count = struct.unpack_from("<IQ", data, at)
            at += 12
            if item in _NUMPY:
                width = np.dtype(_NUMPY[item]).itemsize
                return np.frombuffer(data, _NUMPY[item], count, at).tolist(), at + width * count
            items = []
            for _ in range(count):
                element, at = value(item, at)
                items.append(element)
            return items, at
        fmt = "<" + _SCALARS[kind]
        return struct.unpack_from(fmt, data, at)[0], at + struct.calcsize(fmt)

    metadata: dict[str, object] = {}
    for _ in range(n_kv):
        key, offset = string(offset)
        (kind,) = struct.unpack_from("<I", data, offset)
        metadata[key], offset = value(kind, offset + 4)
    return metadata


def write_tiny_gguf(
    path: str | Path,
    *,
    n_embd: int = 64,
    n_layers: int = 2,
    n_ff: int = 128,
    n_head: int = 4,
    n_head_kv: int | None = None,
    n_ctx: int = 4096,
    seed: int = 0,
    chat_template: str | None = None,
    vocab: str | Path | None = None,
    add_bos: bool = True,
    f16: bool = False,
    weight_scale: float = 0.02,
    embedding_scale: float = 1.0,
    output_scale: float | None = 0.5,
    eos_logit: float = 0.0,
    favour: dict[str, float] | None = None,
) -> Path:
    """Write the model; ``output_scale=None`` ties the output layer to the token embeddings (a smaller file).

    ``favour`` raises the logits of the named tokens (their text in the vocabulary) the same way: a model that
    answers on the scale.
    ``eos_logit`` > 0 raises end-of-text's logit at every position (2.5: the most probable token at the answer
    position of the story prompts, p about 0.3): a model that wants to stop there. 0 writes the
    same file as before the option existed. f32 weights are drawn in float64 (the weights earlier versions wrote, bit
    for bit); f16 weights in float32 (half the memory on a 152k-token vocabulary)."""
    import gguf

    if (eos_logit or favour) and output_scale is None:
        raise ValueError("eos_logit and favour need an output layer of their own (output_scale)")

    path = Path(path)
    rng = np.random.default_rng(seed)
    n_head_kv = n_head_kv or n_head
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tui-rater tiny random llama")
    writer.add_context_length(n_ctx)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head_kv)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    n_vocab, eos_id, token_texts = _add_vocabulary(writer, vocab, add_bos)
    # tokens whose logit is raised at every position: end-of-text, and those ``favour`` names (by their text)
    boosted = {eos_id: eos_logit} if eos_logit else {}
    for text, logit in (favour or {}).items():
        boosted[token_texts.index(text)] = logit
    writer.add_vocab_size(n_vocab)
    if chat_template:
        writer.add_chat_template(chat_template)

    dtype = np.float16 if f16 else np.float32

    def draw(*shape: int, scale: float) -> np.ndarray:
        if f16:
            return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(dtype)
        return (rng.standard_normal(shape) * scale).astype(dtype)

    def tensor(name: str, *shape: int, scale: float = weight_scale) -> None:
        writer.add_tensor(name, draw(*shape, scale=scale))

    def ones(name: str, n: int = n_embd) -> None:
        writer.add_tensor(name, np.ones(n, dtype=np.float32))

    # numpy shapes are ggml's dimensions reversed
    head_dim = n_embd // n_head
    embedding = draw(n_vocab, n_embd, scale=embedding_scale)
    if boosted:  # one constant dimension in every token's embedding survives the (small) layers
        embedding[:, 0] = 4.0
    writer.add_tensor("token_embd.weight", embedding)
    for i in range(n_layers):
        ones(f"blk.{i}.attn_norm.weight")
        tensor(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        tensor(f"blk.{i}.attn_k.weight", n_head_kv * head_dim, n_embd)
        tensor(f"blk.{i}.attn_v.weight", n_head_kv * head_dim, n_embd)
        tensor(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        ones(f"blk.{i}.ffn_norm.weight")
        tensor(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        tensor(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    ones("output_norm.weight")
    if output_scale is not None:  # else llama.cpp uses token_embd as the output layer
        output = draw(n_vocab, n_embd, scale=output_scale)
        if boosted:  # only the boosted tokens read the constant dimension
            output[:, 0] = 0.0
            for token, logit in boosted.items():
                output[token, 0] = logit
        writer.add_tensor("output.weight", output)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _add_vocabulary(writer: gguf.GGUFWriter, vocab: str | Path | None, add_bos: bool) -> tuple[int, int, list[str]]:
    """Write the tokenizer; (the vocabulary's size, its end-of-text token, the tokens' texts)."""
    import gguf

    if vocab is None:
        byte_chars = _bytes_to_unicode()
        tokens = [byte_chars[b] for b in range(256)]
        tokens += ["".join(m.split(" ")) for m in MERGES]
        tokens += ["<s>", "</s>"]
        types = [gguf.TokenType.NORMAL] * (len(tokens) - 2) + [gguf.TokenType.CONTROL] * 2
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("default")
        writer.add_token_list(tokens)
        writer.add_token_types(types)
        writer.add_token_merges(MERGES)
        writer.add_bos_token_id(len(tokens) - 2)
        writer.add_eos_token_id(len(tokens) - 1)
        writer.add_add_bos_token(True)
        return len(tokens), len(tokens) - 1, tokens
    meta = read_vocab(vocab)
    listed = meta["tokenizer.ggml.tokens"]
    assert isinstance(listed, list)
    writer.add_tokenizer_model(str(meta["tokenizer.ggml.model"]))
    writer.add_tokenizer_pre(str(meta.get("tokenizer.ggml.pre", "default")))
    writer.add_token_list(listed)
    # read_vocab gives GGUF arrays as lists: the token types are integers, the merges strings
    writer.add_token_types(cast("list[int]", meta["tokenizer.ggml.token_type"]))
    if "tokenizer.ggml.merges" in meta:
        writer.add_token_merges(cast("list[str]", meta["tokenizer.ggml.merges"]))
    for key, add in (
        ("tokenizer.ggml.bos_token_id", writer.add_bos_token_id),
        ("tokenizer.ggml.eos_token_id", writer.add_eos_token_id),
        ("tokenizer.ggml.padding_token_id", writer.add_pad_token_id),
    ):
        if key in meta:
            add(int(meta[key]))  # type: ignore[call-overload]
    writer.add_add_bos_token(add_bos)
    eos = int(meta.get("tokenizer.ggml.eos_token_id", len(listed) - 1))  # type: ignore[call-overload]
    return len(listed), eos, [str(t) for t in listed]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--embd", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ff", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--heads-kv", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--vocab", type=Path, help="a vocabulary-only GGUF, e.g. tests/data/vocab/ggml-vocab-qwen2.gguf"
    )
    parser.add_argument(
        "--template",
        choices=("none", "bos", "vocab"),
        default="none",
        help="chat template: none, one that begins with {{ bos_token }}, or the vocabulary file's own",
    )
    parser.add_argument("--no-add-bos", action="store_true", help="the model does not ask for a BOS token")
    parser.add_argument("--f16", action="store_true")
    parser.add_argument("--eos-logit", type=float, default=0.0, help="make end-of-text the likely next token")
    args = parser.parse_args()
    template = {"none": None, "bos": BOS_TEMPLATE}.get(args.template)
    if args.template == "vocab":
        if args.vocab is None:
            parser.error("--template vocab needs --vocab")
        template = str(read_vocab(args.vocab).get("tokenizer.chat_template") or "") or None
    write_tiny_gguf(
        args.out,
        n_embd=args.embd,
        n_layers=args.layers,
        n_ff=args.ff,
        n_head=args.heads,
        n_head_kv=args.heads_kv,
        seed=args.seed,
        vocab=args.vocab,
        chat_template=template,
        add_bos=not args.no_add_bos,
        f16=args.f16,
        eos_logit=args.eos_logit,
    )
    print(args.out)


if __name__ == "__main__":
    main()
