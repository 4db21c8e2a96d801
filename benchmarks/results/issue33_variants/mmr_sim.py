"""Issue 33 variant, simulated on stored rankings (not kept): maximal marginal relevance over
the first `depth` places (relevance 1/place, novelty = 1 - the largest cosine to a memory
already placed; the first `keep` places kept), for set questions or every question. Usage
(after python benchmarks/ceiling_multihop.py): python mmr_sim.py
"""
import json, re, sys
import numpy as np, chromadb
from collections import defaultdict
sys.path.insert(0,'.')
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
SET = re.compile(r"^\s*(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+|\w+\s+){0,2}?\w+s\s+(?:do|does|did|has|have|had|is|are|was|were)\b", re.I)
c=chromadb.PersistentClient(path='results/ceiling/cache/store')
vec={}
for col in c.list_collections():
    r=c.get_collection(col.name).get(include=['embeddings'])
    for i,e in zip(r['ids'],r['embeddings']): vec[i]=np.asarray(e,dtype=np.float32)
rows=[json.loads(l) for l in open('results/ceiling/questions.jsonl')]
rows=[r for r in rows if r['system']=='ramem' and r['evidence'] and r['category_name']!='adversarial']
emb=CachedEmbedder(MiniLMEmbedder(),'results/ceiling/cache/embeddings.sqlite')
def mmr(r, lam, depth, keep):
    lst=r['retrieved'][:depth]
    V=np.stack([vec[x['id']] for x in lst]); V/=np.linalg.norm(V,axis=1,keepdims=True)
    rel=np.array([1/(1+i) for i in range(len(lst))]); rel=rel/rel.max()
    sel=list(range(keep)); rest=[i for i in range(len(lst)) if i not in sel]
    while len(sel)<10 and rest:
        sims=V[rest]@V[sel].T
        score=lam*rel[rest]-(1-lam)*sims.max(axis=1)
        j=rest[int(np.argmax(score))]; sel.append(j); rest.remove(j)
    return [lst[i] for i in sel]
def rec(r,lst):
    ev=set(r['evidence']); got=set()
    for x in lst[:10]: got|=set(x['source_ids'])&ev
    return len(got)/len(ev), got==ev
convs={'choose':('conv-26','conv-30','conv-41'),'report':('conv-42','conv-43')}
for setonly in (True,False):
  for lam,depth,keep in [(1.0,50,10),(0.7,30,3),(0.5,30,3),(0.3,30,3),(0.5,20,5),(0.3,20,5),(0.7,20,1),(0.5,50,5)]:
    out=[]
    for part in ('choose','report'):
        res=defaultdict(list); alle=[]
        for r in rows:
            if r['sample_id'] not in convs[part]: continue
            fire = (SET.search(r['question']) is not None) if setonly else True
            lst = mmr(r,lam,depth,keep) if fire and lam<1 else r['retrieved']
            x,full=rec(r,lst); res['all'].append(x); res[r['category_name']].append(x)
            if r['category_name']=='multi-hop': alle.append(full)
        out.append(f"{part}: all {np.mean(res['all']):.3f} mh {np.mean(res['multi-hop']):.3f} sh {np.mean(res['single-hop']):.3f} tmp {np.mean(res['temporal']):.3f} od {np.mean(res['open-domain']):.3f} mh-all {np.mean(alle):.3f}")
    print(f"set={setonly} lam={lam} depth={depth} keep={keep} | "+" | ".join(out))
