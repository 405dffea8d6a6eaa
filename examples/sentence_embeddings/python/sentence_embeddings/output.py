"""Printing numbers the same way in every language: fixed decimals, rounded
half to even from the float32 value (see the README, "Output")."""
import math


def fixed(value, decimals):
    """float32 value -> text with `decimals` digits after the point."""
    v = float(value)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    scale = 10 ** decimals
    n = round(v * scale)  # the float64 product, rounded half to even
    sign = "-" if n < 0 else ""
    n = abs(n)
    return f"{sign}{n // scale}.{n % scale:0{decimals}d}"


def similarity_table(texts, sim):
    n = len(texts)
    lines = ["cosine similarity", "     " + "".join(f"{j:>8}" for j in range(n))]
    for i in range(n):
        lines.append(f"{i:>5}" + "".join(f"{fixed(sim[i, j], 4):>8}" for j in range(n)))
    for i, t in enumerate(texts):
        lines.append(f"{i:>5}  {t}")
    return "\n".join(lines)


def embedding_lines(emb):
    return "\n".join(" ".join(fixed(v, 6) for v in row) for row in emb)


def token_lines(ids):
    return "\n".join(" ".join(str(i) for i in row) for row in ids)
