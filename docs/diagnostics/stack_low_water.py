# Rebuilds the calls live at the deepest stack access from stack-low-water.c's output:
# python3 stack_low_water.py FILE IMAGE.elf (IMAGE: the first core ELF inside a .pool file).
import sys, subprocess
lines=open(sys.argv[1]).read().split('\n')
blocks=[];cur=None
for l in lines:
    if l.startswith('low'): cur=[l,[]]; blocks.append(cur)
    elif l and cur: cur[1].append(int(l,16))
elf=sys.argv[2]
for head,evs in blocks:
    print(head)
    st=[]
    for e in evs:
        if e>>63: 
            if st: st.pop()
        else: st.append((e & ((1<<40)-1), (e>>40)&0xffff))
    addrs=[hex(a) for a,_ in st]
    names=subprocess.run(['xtensa-lx106-elf-addr2line','-f','-C','-e',elf]+addrs,capture_output=True,text=True).stdout.split('\n')[0::2]
    tot=0
    for (a,fr),n in zip(st,names):
        tot+=fr; print(f"  {fr:5} {tot:6} {n[:100]}")
