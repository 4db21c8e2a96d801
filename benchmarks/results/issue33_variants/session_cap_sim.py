"""Issue 33 variant, simulated on stored rankings (not kept): for set questions ("What pets
does Nate have?"), at most `cap` memories of one session keep their place in the top 10; up to
`promo` of the best-ranked memories of sessions the top 10 lacks (from places 11-50) take the
places of the surplus. Usage: python session_cap_sim.py results/ceiling/questions.jsonl
"""
import json, re, sys
from collections import defaultdict, Counter
SET = re.compile(r"^\s*(?:what|which)\s+(?:kinds?\s+of\s+|types?\s+of\s+|\w+\s+){0,2}?\w+s\s+(?:do|does|did|has|have|had|is|are|was|were)\b", re.I)
rows=[json.loads(l) for l in open(sys.argv[1])]
rows=[r for r in rows if r['system']=='ramem' and r['category_name']!='adversarial']
def recall(r, lst, k=10):
    ev=set(r['evidence']); got=set()
    for x in lst[:k]: got|=set(x['source_ids'])&ev
    return len(got)/len(ev) if ev else None, got==ev
def variant(r, cap, promo, setonly):
    lst=r['retrieved']
    if setonly and not SET.search(r['question']): return lst
    top=lst[:10]; cnt=Counter(x['session_id'] for x in top)
    # memories over the cap in top10, from the bottom
    seen=Counter(); over=[]
    for i,x in enumerate(top):
        seen[x['session_id']]+=1
        if seen[x['session_id']]>cap: over.append(i)
    new=[]; have=set(cnt)
    for x in lst[10:]:
        if x['session_id'] not in have: new.append(x); have.add(x['session_id'])
    n=min(len(over), promo, len(new))
    if n==0: return lst
    drop=set(over[-n:])
    kept=[x for i,x in enumerate(top) if i not in drop]
    out=kept+new[:n]
    rest=[x for i,x in enumerate(top) if i in drop]+[x for x in lst[10:] if x not in new[:n]]
    return out+rest
convs={'choose':('conv-26','conv-30','conv-41'),'report':('conv-42','conv-43')}
cats=['multi-hop','single-hop','temporal','open-domain']
for part in ['choose','report']:
    rs=[r for r in rows if r['sample_id'] in convs[part] and r['evidence']]
    print(part, len(rs), 'fires(set)', sum(bool(SET.search(r['question'])) for r in rs))
    for cap,promo,setonly in [(99,0,True),(2,1,True),(2,2,True),(3,1,True),(3,2,True),(4,2,True),(2,2,False),(3,2,False),(4,1,False),(5,1,False)]:
        res=defaultdict(list); allev=defaultdict(list)
        for r in rs:
            v=variant(r,cap,promo,setonly); rec,full=recall(r,v)
            res[r['category_name']].append(rec); allev[r['category_name']].append(full); res['all'].append(rec)
        print(f"  cap{cap} promo{promo} set{setonly}: all {sum(res['all'])/len(res['all']):.3f} "+" ".join(f"{c} {sum(res[c])/len(res[c]):.3f}" for c in cats)+f" mh-all@10 {sum(allev['multi-hop'])/len(allev['multi-hop']):.3f}")
