"""Issue 33, the second round by set members, simulated on stored rankings before it was built
(the variants not kept). Usage (after python benchmarks/ceiling_multihop.py, from the repository
root): python benchmarks/results/issue33_variants/members_sim.py

second(): the surface words of every statement (not the index's stems) near the kind asked,
finds ordered by their best word's cosine; second3(): finds only among the first round's first
`depth` places (the candidate pool); second4(): the index's stems (what was built).
"""
import json, re, sys, itertools
import numpy as np, chromadb
from collections import defaultdict
sys.path.insert(0,'.')
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder, normalize
from ramem_core.anchoring import STOPWORDS
SET = re.compile(r"^\s*(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+)?((?:\w+\s+){0,2}?\w+s)\s+(?:do|does|did|has|have|had|is|are|was|were)\b", re.I)
c=chromadb.PersistentClient(path='results/ceiling/cache/store')
mem={}; byconv=defaultdict(list)
for col in c.list_collections():
    r=c.get_collection(col.name).get(include=['documents','metadatas'])
    for i,d,m in zip(r['ids'],r['documents'],r['metadatas']):
        if not m.get('kind'): continue
        cid=m.get('conversation_id') or col.name.removeprefix('ramem_'); m=dict(m); m['conversation_id']=cid; mem[i]=(d,m); byconv[cid].append(i)
rows=[json.loads(l) for l in open('results/ceiling/questions.jsonl')]
rows=[r for r in rows if r['system']=='ramem' and r['evidence'] and r['category_name']!='adversarial']
emb=CachedEmbedder(MiniLMEmbedder(),'/tmp/work/sim/words.sqlite')
W=re.compile(r"[A-Za-z][A-Za-z'-]+")
def words(t): return {w.lower() for w in W.findall(t) if len(w)>2 and w.lower() not in STOPWORDS}
memwords={i:words(d.split(':',1)[-1]) for i,(d,m) in mem.items()}
vocab=sorted(set().union(*memwords.values()))
print('vocab',len(vocab),file=sys.stderr)
V=normalize(emb.embed(vocab)); vi={w:k for k,w in enumerate(vocab)}
names={m['speaker'] for d,m in mem.values() if m.get('speaker')}
def head(q):
    m=SET.search(q); return m.group(1) if m else None
heads=sorted({h for r in rows if (h:=head(r['question']))})
H=dict(zip(heads, normalize(emb.embed(heads))))
def second(r, tau, M, start, n, speaker_only):
    h=head(r['question'])
    lst=r['retrieved']
    if not h: return lst, False
    qw=words(r['question'])
    sims=V@H[h]
    exp={vocab[k]:float(sims[k]) for k in np.argsort(-sims)[:M] if sims[k]>=tau and vocab[k] not in qw}
    if not exp: return lst, False
    named=[n_ for n_ in names if n_.lower() in r['question'].lower()]
    top=lst[:start]
    topwords=set().union(*(memwords[x['id']] for x in lst[:10]))
    finds=[]
    for i in byconv[r['sample_id']]:
        d,m=mem[i]
        if m['kind']!='statement': continue
        if speaker_only and len(named)==1 and m.get('speaker')!=named[0]: continue
        hit=[w for w in memwords[i] if w in exp and w not in topwords]
        if hit: finds.append((max(exp[w] for w in hit), i, hit))
    finds.sort(reverse=True)
    add=[]; used=set()
    ids_top={x['id'] for x in top}
    for s,i,hit in finds:
        if i in ids_top or any(w in used for w in hit): continue
        add.append({'id':i,'source_ids':mem[i][1]['source_ids']}); used|=set(hit)
        if len(add)>=n: break
    if not add: return lst, False
    addids={a['id'] for a in add}
    rest=[x for x in lst[start:] if x['id'] not in addids]
    return top+add+rest, True
def rec(r,lst):
    ev=set(r['evidence']); got=set()
    for x in lst[:10]: got|=set(x['source_ids'])&ev
    return len(got)/len(ev), got==ev
convs={'choose':('conv-26','conv-30','conv-41'),'report':('conv-42','conv-43')}


from ramem_core.index.text import Tokenizer
tok=Tokenizer()
memstems={i:set(tok(d.split(':',1)[-1])) for i,(d,m) in mem.items()}
svocab=sorted(set().union(*memstems.values()))
SV=normalize(emb.embed(svocab))
def second4(r, tau, M, start, n):
    h=head(r['question']); lst=r['retrieved']
    if not h: return lst, False
    qs=set(tok(r['question']))
    sims=SV@H[h]
    exp={svocab[k]:float(sims[k]) for k in np.argsort(-sims)[:M] if sims[k]>=tau and not any(svocab[k][:4]==q[:4] for q in qs)}
    if not exp: return lst, False
    named=[n_ for n_ in names if n_.lower() in r['question'].lower()]
    top=lst[:start]; place={x['id']:k for k,x in enumerate(lst)}
    topw=set().union(*(memstems[x['id']] for x in lst[:10]))
    finds=[]
    for i in byconv[r['sample_id']]:
        d,m=mem[i]
        if len(named)==1 and m.get('speaker')!=named[0]: continue
        hit=[w for w in memstems[i] if w in exp and w not in topw]
        if hit: finds.append(((place.get(i,99),-max(exp[w] for w in hit)), i, hit))
    finds.sort()
    add=[]; used=set(); ids_top={x['id'] for x in top}
    for s,i,hit in finds:
        if i in ids_top or any(w in used for w in hit): continue
        add.append({'id':i,'source_ids':mem[i][1]['source_ids']}); used|=set(hit)
        if len(add)>=n: break
    if not add: return lst, False
    addids={a['id'] for a in add}
    return top+add+[x for x in lst[start:] if x['id'] not in addids], True

if __name__ == "__main__":
    import itertools
    for label, fn, grid in (
        ("surface words", lambda r, t, s, n: second(r, t, 50, s, n, True), itertools.product((0.4, 0.5), (7, 8), (1, 2, 3))),
        ("first 50 only", lambda r, t, s, n: second3(r, t, 50, s, n, 50)[:2], itertools.product((0.5,), (8,), (2,))),
        ("stems", lambda r, t, s, n: second4(r, t, 50, s, n), itertools.product((0.4, 0.5), (7, 8), (1, 2, 3))),
    ):
        for tau, start, n in grid:
            out = []
            for part in ("choose", "report"):
                res = defaultdict(list); alle = []
                for r in rows:
                    if r["sample_id"] not in convs[part]: continue
                    lst, _ = fn(r, tau, start, n)
                    x, full = rec(r, lst); res["all"].append(x); res[r["category_name"]].append(x)
                    if r["category_name"] == "multi-hop": alle.append(full)
                out.append(f"{part}: all {np.mean(res['all']):.3f} mh {np.mean(res['multi-hop']):.3f} sh {np.mean(res['single-hop']):.3f} mh-all {np.mean(alle):.3f}")
            print(f"{label} tau={tau} start={start} n={n} | " + " | ".join(out), flush=True)
