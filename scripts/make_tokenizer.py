"""Write the local tokenizer AIPerf loads, so that it never reaches for the network.

AIPerf 0.13.0 always loads a tokenizer to count prompt tokens; by default it fetches the
model's from the Hugging Face hub, which our machines cannot reach. Image-edit metrics do
not depend on token counts, so a small word-level tokenizer (whitespace words, unknown
words count one token each) is enough. It is generated, never downloaded.
"""

import json
import os
import sys

from tokenizers import Tokenizer, models, pre_tokenizers


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    vocab = {"[UNK]": 0}
    for i in range(256):
        vocab[f"<0x{i:02X}>"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(os.path.join(out, "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
        "model_max_length": 1000000,
        "name_or_path": "qualkit-offline-word-tokenizer",
    }
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"tokenizer: wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tokenizer.py OUT_DIR")
    main(sys.argv[1])
