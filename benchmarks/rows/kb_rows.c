/* kb_rows.c - one kernelbridge row kernel or activation on one shape, best
 * of 5 rounds, in its own process (run.sh here runs it beside PyTorch's
 * torch_rows.py, each side in its own process).
 *   kb_rows KERNEL ROWS COLS CALLS THREADS
 * KERNEL: softmax log_softmax layernorm rmsnorm ce gelu gelu_tanh silu glu glu_fused rope
 * copy
 * (rope: ROWS positions of COLS / 128 heads of 128; glu: SwiGLU with gate and
 * up as separate [ROWS, COLS] tensors; glu_fused: both in one [ROWS, 2 COLS]
 * tensor, as a fused gate_up layer writes them)
 * (copy: memcpy of the same bytes).  Prints ms per call and GB/s of the
 * bytes the call must move (x read, y written; glu: gate and up read; ce:
 * the logits read). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernelbridge.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  const char*k=argc>1?argv[1]:"layernorm"; long rows=argc>2?atol(argv[2]):32, cols=argc>3?atol(argv[3]):1024; int reps=argc>4?atoi(argv[4]):2000;
  int th=argc>5?atoi(argv[5]):1;
  kb_context*ctx; kb_context_create(KB_BACKEND_CPU,th,&ctx);
  long n=rows*cols; float*x=malloc(n*4),*y=malloc(n*4),*w=malloc(cols*4),*b=malloc(cols*4); int32_t*t=malloc(rows*4); float*l=malloc(rows*4); float ml;
  float*u=!strcmp(k,"glu")?malloc(n*4):NULL; for(long i=0;u&&i<n;i++) u[i]=(float)(i%7)-3.0f;
  float*h=!strcmp(k,"glu_fused")?malloc(2*n*4):NULL; for(long i=0;h&&i<2*n;i++) h[i]=(float)(i%11)-5.0f;
  srand(1); for(long i=0;i<n;i++) x[i]=(rand()/(double)RAND_MAX-0.5)*8; for(long i=0;i<cols;i++){w[i]=1+0.1*i/cols;b[i]=0.01*i/cols;}
  for(long r=0;r<rows;r++) t[r]=r%cols;
  double best=1e9;
  for(int rep=0;rep<5;rep++){ double t0=now();
  for(int i=0;i<reps;i++){
    kb_status s=0;
    if(!strcmp(k,"layernorm")) s=kb_layernorm(ctx,rows,cols,x,w,b,1e-5f,y);
    else if(!strcmp(k,"rmsnorm")) s=kb_rmsnorm(ctx,rows,cols,x,w,1e-5f,y);
    else if(!strcmp(k,"softmax")) s=kb_softmax(ctx,rows,cols,x,y);
    else if(!strcmp(k,"log_softmax")) s=kb_log_softmax(ctx,rows,cols,x,y);
    else if(!strcmp(k,"ce")) s=kb_cross_entropy(ctx,rows,cols,x,t,-100,l,&ml);
    else if(!strcmp(k,"gelu")) s=kb_gelu(ctx,n,x,y);
    else if(!strcmp(k,"gelu_tanh")) s=kb_gelu_tanh(ctx,n,x,y);
    else if(!strcmp(k,"silu")) s=kb_silu(ctx,n,x,y);
    else if(!strcmp(k,"glu")) s=kb_glu(ctx,rows,cols,x,cols,u,cols,KB_ACTIVATION_SILU,y);
    else if(!strcmp(k,"glu_fused")) s=kb_glu(ctx,rows,cols,h,2*cols,h+cols,2*cols,KB_ACTIVATION_SILU,y);
    else if(!strcmp(k,"rope")) s=kb_rope(ctx,rows,cols/128,128,x,t,10000.0,y);
    else if(!strcmp(k,"copy")) memcpy(y,x,n*4);
    if(s){printf("err %d %s\n",s,kb_context_last_error(ctx));return 1;}
  }
  double dt=(now()-t0)/reps; if(dt<best)best=dt;}
  printf("%s %ldx%ld th%d: %.3f ms, %.2f GB/s\n",k,rows,cols,th,best*1e3,(!strcmp(k,"ce")?4.0:!strncmp(k,"glu",3)?12.0:8.0)*n/best/1e9);
  return 0;}
