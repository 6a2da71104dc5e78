# Writes a key-value file in the Lost-in-the-Middle format (uuid4 keys and values, one record per line).
import json, lzma, random, uuid
rng = random.Random(0)
with lzma.open("kv-retrieval-10_keys.jsonl.xz", "wt") as fh:
    for _ in range(40):
        kv = [[str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(2)] for _ in range(10)]
        key, value = kv[rng.randrange(10)]
        fh.write(json.dumps({"ordered_kv_records": kv, "key": key, "value": value}) + "\n")
