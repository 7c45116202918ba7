"""Write the local tokenizer AIPerf loads, so that it never reaches for the network.

AIPerf 0.13.0 always loads a tokenizer to count prompt tokens; by default it fetches the
model's from the Hugging Face hub, which our machines cannot reach. Image-edit metrics do
not depend on token counts, so a small word-level tokenizer (whitespace words, unknown
words count one token each) is enough. It is generated, never downloaded.

It is written as a Hugging Face cache (OUT/hub/models--qualkit--offline-word-tokenizer,
one snapshot named by its content's sha1, refs/main pointing at it), so that AIPerf,
given HF_HOME=OUT, HF_HUB_OFFLINE=1 and --tokenizer qualkit/offline-word-tokenizer,
finds it cached: it skips its tokenizer prefetch (a subprocess that imports transformers,
1.8 s on our CPU machine) and never touches the hub. A plain directory path with
HF_HUB_OFFLINE=1 fails in AIPerf 0.13.0 (it looks the path up as a repo id).
"""

import hashlib
import json
import os
import shutil
import sys
import tempfile

from tokenizers import Tokenizer, models, pre_tokenizers

REPO = "qualkit/offline-word-tokenizer"


def files() -> dict[str, bytes]:
    vocab = {"[UNK]": 0}
    for i in range(256):
        vocab[f"<0x{i:02X}>"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "[UNK]",
        "model_max_length": 1000000,
        "name_or_path": REPO,
    }
    return {
        "tokenizer.json": tok.to_str().encode(),
        "tokenizer_config.json": json.dumps(config, indent=2).encode(),
    }


def main(out: str) -> None:
    content = files()
    rev = hashlib.sha1(b"".join(k.encode() + v for k, v in sorted(content.items()))).hexdigest()
    repo = os.path.join(out, "hub", "models--" + REPO.replace("/", "--"))
    os.makedirs(os.path.dirname(repo), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(repo))
    os.makedirs(os.path.join(tmp, "snapshots", rev))
    os.makedirs(os.path.join(tmp, "refs"))
    for name, data in content.items():
        with open(os.path.join(tmp, "snapshots", rev, name), "wb") as f:
            f.write(data)
    with open(os.path.join(tmp, "refs", "main"), "w") as f:
        f.write(rev)
    shutil.rmtree(repo, ignore_errors=True)
    os.rename(tmp, repo)
    print(f"tokenizer: wrote {REPO} at revision {rev} into the Hugging Face cache {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tokenizer.py HF_HOME")
    main(sys.argv[1])
