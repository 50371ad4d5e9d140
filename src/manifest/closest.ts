/** The known word a typo most likely meant (at most two edits away, and fewer than half its letters), for "did you mean". */
export function closestTo(word: string, known: readonly string[]): string | undefined {
  const near = (k: string) => distance(k, word) <= Math.min(2, Math.ceil(word.length / 2) - 1);
  return known.filter(near).sort((a, b) => distance(a, word) - distance(b, word))[0];
}

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(
        d[i - 1]![j]! + 1,
        d[i]![j - 1]! + 1,
        d[i - 1]![j - 1]! + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1),
      );
    }
  }
  return d[a.length]![b.length]!;
}
