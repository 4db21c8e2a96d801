"""Issue 33 variant, simulated on stored rankings (not kept): a learned second stage over the
first 50 places. Logistic regression on relational features (place, question cosine and its
rank, first of its session, place within its session, session size and best place, novelty
against the memories above, question turn, speaker named or not, set question and its
interactions, length, contextual), fitted on the choose part with leave-one-conversation-out
cross-validation choosing L2, places kept and the blend with the first ranking; then the
report part once. Usage (after python benchmarks/ceiling_multihop.py): python rerank_sim.py
"""
import json, re, sys
import numpy as np, chromadb
from collections import defaultdict
sys.path.insert(0, '.')
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
SET = re.compile(r"^\s*(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+|\w+\s+){0,2}?\w+s\s+(?:do|does|did|has|have|had|is|are|was|were)\b", re.I)
c = chromadb.PersistentClient(path='results/ceiling/cache/store')
vec, doc, spk = {}, {}, {}
for col in c.list_collections():
    r = c.get_collection(col.name).get(include=['embeddings', 'documents', 'metadatas'])
    for i, e, d, m in zip(r['ids'], r['embeddings'], r['documents'], r['metadatas']):
        v = np.asarray(e, dtype=np.float32); vec[i] = v / np.linalg.norm(v); doc[i] = d; spk[i] = m.get('speaker', '')
rows = [json.loads(l) for l in open('results/ceiling/questions.jsonl')]
rows = [r for r in rows if r['system'] == 'ramem' and r['evidence'] and r['category_name'] != 'adversarial']
emb = CachedEmbedder(MiniLMEmbedder(), 'results/ceiling/cache/embeddings.sqlite')
qv = emb.embed([r['question'] for r in rows])
qv = np.asarray(qv, dtype=np.float32); qv /= np.linalg.norm(qv, axis=1, keepdims=True)
speakers = set(spk.values())
D = 50
def feats(r, q):
    lst = r['retrieved'][:D]
    V = np.stack([vec[x['id']] for x in lst])
    cos = V @ q
    n = len(lst)
    named = [s for s in speakers if s and re.search(r'\b' + re.escape(s) + r'\b', r['question'])]
    isset = 1.0 if SET.search(r['question']) else 0.0
    seen = defaultdict(int); best = {}
    sescount = defaultdict(int)
    for x in lst: sescount[x['session_id']] += 1
    F = []
    for p, x in enumerate(lst):
        s = x['session_id']
        within = seen[s]; seen[s] += 1
        best.setdefault(s, p)
        nov = float((V[:p] @ V[p]).max()) if p else 0.0
        t = doc[x['id']]
        row = [1.0 / (p + 1), np.log(p + 1), cos[p], float(np.argsort(-cos).tolist().index(p)) / n,
               1.0 if within == 0 else 0.0, within, sescount[s] / n, np.log(best[s] + 1), nov,
               1.0 if '?' in t else 0.0,
               1.0 if (len(named) == 1 and spk[x['id']] == named[0]) else 0.0,
               1.0 if (len(named) == 1 and spk[x['id']] != named[0]) else 0.0,
               isset, isset * (1.0 if within == 0 else 0.0), isset * nov, np.log(len(t.split()) + 1),
               1.0 if x.get('contextual') else 0.0]
        F.append(row)
    y = np.array([1.0 if set(x['source_ids']) & set(r['evidence']) else 0.0 for x in lst])
    return np.array(F, dtype=np.float64), y
data = [feats(r, qv[i]) for i, r in enumerate(rows)]
def fit(idx, l2):
    X = np.concatenate([data[i][0] for i in idx]); y = np.concatenate([data[i][1] for i in idx])
    mu, sd = X.mean(0), X.std(0) + 1e-9; Xs = (X - mu) / sd
    w = np.zeros(X.shape[1]); b = 0.0
    for _ in range(400):
        p = 1 / (1 + np.exp(-(Xs @ w + b)))
        g = Xs.T @ (p - y) / len(y) + l2 * w; gb = (p - y).mean()
        w -= 0.5 * g; b -= 0.5 * gb
    return lambda X: ((X - mu) / sd) @ w + b
def r10(r, order):
    ev = set(r['evidence']); lst = r['retrieved']
    got = set()
    for j in order[:10]: got |= set(lst[j]['source_ids']) & ev
    return len(got) / len(ev), got == ev
def evaluate(idx, model, keep, alpha):
    res = defaultdict(list); alle = []
    for i in idx:
        r = rows[i]; X, _ = data[i]
        s = model(X); s = (s - s.mean()) / (s.std() + 1e-9)
        base = -np.log(np.arange(len(s)) + 1)
        score = alpha * s + (1 - alpha) * (base - base.mean()) / (base.std() + 1e-9)
        order = list(range(min(keep, len(s)))) + sorted(range(keep, len(s)), key=lambda j: -score[j])
        x, full = r10(r, order); res['all'].append(x); res[r['category_name']].append(x)
        if r['category_name'] == 'multi-hop': alle.append(full)
    return {k: round(float(np.mean(v)), 3) for k, v in res.items()} | {'mh_all': round(float(np.mean(alle)), 3)}
choose = [i for i, r in enumerate(rows) if r['sample_id'] in ('conv-26', 'conv-30', 'conv-41')]
report = [i for i, r in enumerate(rows) if r['sample_id'] in ('conv-42', 'conv-43')]
# cross-validation on choose by conversation
convs = ('conv-26', 'conv-30', 'conv-41')
grid = [(l2, keep, a) for l2 in (0.01, 0.1) for keep in (0, 3, 5) for a in (0.3, 0.6, 1.0)]
ident = lambda X: -np.log(np.arange(len(X)) + 1)
print('choose baseline', evaluate(choose, ident, 0, 1.0))
best = None
for l2, keep, a in grid:
    tot = defaultdict(list)
    for held in convs:
        tr = [i for i in choose if rows[i]['sample_id'] != held]; te = [i for i in choose if rows[i]['sample_id'] == held]
        m = fit(tr, l2); out = evaluate(te, m, keep, a)
        for i in te: pass
        tot['n'].append(len(te)); tot['all'].append(out['all'] * len(te))
    cv = sum(tot['all']) / sum(tot['n'])
    print('cv', l2, keep, a, round(cv, 4))
    if best is None or cv > best[0]: best = (cv, l2, keep, a)
print('best', best)
_, l2, keep, a = best
m = fit(choose, l2)
print('choose (in-sample)', evaluate(choose, m, keep, a))
print('report baseline', evaluate(report, ident, 0, 1.0))
print('report', evaluate(report, m, keep, a))
