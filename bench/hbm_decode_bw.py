import os,subprocess as sp,torch,torch.nn.functional as F
B=torch.bfloat16;c=torch.cuda;N=c.get_device_name();G=2**30;R=[]
def tm(f,n=15):
 s,e=c.Event(enable_timing=1),c.Event(enable_timing=1);[f() for _ in range(3)];t=[]
 for _ in range(n):s.record();f();e.record();e.synchronize();t.append(s.elapsed_time(e)/1e3)
 return sorted(t)[n//2]
def gr(fs):
 s=c.Stream();s.wait_stream(c.current_stream())
 with c.stream(s):[f() for f in fs]
 c.current_stream().wait_stream(s);g=c.CUDAGraph()
 with c.graph(g):[f() for f in fs]
 return g
def run(name,fn):
 try:R.append((name,)+fn())
 except Exception as x:print('FAIL',name,x)
a=torch.randn(2*G,dtype=B,device='cuda');b=torch.empty_like(a)
run('read_sum',lambda:(4*G,1,tm(lambda:a.sum(dtype=torch.float32))))
run('copy_rw',lambda:(8*G,1,tm(lambda:b.copy_(a))))
del a,b
def rd(S):
 n=max(4,2**31//S);xs=[torch.randn(S//2,dtype=B,device='cuda') for _ in range(n)];o=torch.empty(n,device='cuda')
 return S,n,tm(gr([lambda x=x,i=i:torch.sum(x,dtype=torch.float32,out=o[i]) for i,x in enumerate(xs)]).replay)/n
for S in (2**20,2**22,2**24,2**26,2**28):run(f'read_graph_{S}',lambda:rd(S))
def mv(M,K,Nn):
 n=max(4,2**31//(K*Nn*2));W=[torch.randn(Nn,K,dtype=B,device='cuda') for _ in range(n)];x=torch.randn(M,K,dtype=B,device='cuda')
 return K*Nn*2,n,tm(gr([lambda w=w:F.linear(x,w) for w in W]).replay)/n
for K,Nn in ((2048,3072),(2048,16384),(4096,6144),(4096,4096),(4096,28672),(14336,4096),(5120,7168),(5120,27648),(13824,5120)):
 for M in (1,8,64):run(f'gemv_m{M}_k{K}_n{Nn}',lambda:mv(M,K,Nn))
t=torch.zeros(1,device='cuda');run('tiny_kernel',lambda:(4,2000,tm(gr([lambda:t.add_(1)]*2000).replay)/2000))
ck=sp.run(['nvidia-smi','--query-gpu=clocks.max.sm,clocks.max.mem,power.limit','--format=csv,noheader'],capture_output=1,text=1).stdout.strip().replace(',',';')
with open(os.environ.get('OUT','.')+'/hbm_decode_bw.csv','w') as f:
 f.write('device,test,bytes,kernels,s_per_kernel,gb_s,torch,clocks\n')
 for r in R:l=f'{N},{r[0]},{r[1]},{r[2]},{r[3]:.4e},{r[1]/r[3]/1e9:.1f},{torch.__version__},{ck}';f.write(l+'\n');print(l)
