/* kb_rows.c - one kernelbridge row kernel or activation on one shape, best
 * of 5 rounds, in its own process (run.sh here runs it beside PyTorch's
 * torch_rows.py, each side in its own process).
 *   kb_rows KERNEL ROWS COLS CALLS THREADS
 * KERNEL: softmax log_softmax layernorm rmsnorm ce ce_backward gelu gelu_tanh silu glu glu_fused rope
 * copy, and softmax log_softmax layernorm rmsnorm gelu gelu_tanh silu glu with a _bf16 or
 * _f16 suffix (the 16-bit entry points on the same values rounded to that type)
 * (rope: ROWS positions of COLS / 128 heads of 128; glu: SwiGLU with gate and
 * up as separate [ROWS, COLS] tensors; glu_fused: both in one [ROWS, 2 COLS]
 * tensor, as a fused gate_up layer writes them)
 * (copy: memcpy of the same bytes).  Prints ms per call and GB/s of the
 * bytes the call must move (x read, y written; glu: gate and up read; ce:
 * the logits read; ce_backward: the logits read, the gradient written). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernelbridge.h"
/* float -> bf16 / f16 bits, round to nearest even; normal finite values only
 * (the inputs here lie in [-5, 5]). */
static uint16_t to_bf16(float f){uint32_t u;memcpy(&u,&f,4);u+=0x7fff+((u>>16)&1);return (uint16_t)(u>>16);}
static uint16_t to_f16(float f){uint32_t u;memcpy(&u,&f,4);uint32_t s=(u>>16)&0x8000;int e=(int)((u>>23)&255)-127+15;uint32_t m=u&0x7fffff;
  if(e<=0)return (uint16_t)s; uint32_t r=((uint32_t)e<<10|m>>13); uint32_t rem=m&0x1fff; if(rem>0x1000||(rem==0x1000&&(r&1)))r++; return (uint16_t)(s|r);}
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
  /* 16-bit variants: k16 is the kernel's name without the suffix. */
  int bf=0,hf=0; char k16[64]; snprintf(k16,sizeof k16,"%s",k); char*suf=strrchr(k16,'_');
  if(suf&&!strcmp(suf,"_bf16")){bf=1;*suf=0;} else if(suf&&!strcmp(suf,"_f16")){hf=1;*suf=0;}
  uint16_t*hx=NULL,*hy=NULL,*hu=NULL,*hw=NULL,*hb=NULL;
  if(bf||hf){uint16_t(*cv)(float)=bf?to_bf16:to_f16; hx=malloc(n*2);hy=malloc(n*2);hu=malloc(n*2);hw=malloc(cols*2);hb=malloc(cols*2);
    for(long i=0;i<n;i++){hx[i]=cv(x[i]);hu[i]=cv((float)(i%7)-3.0f);} for(long i=0;i<cols;i++){hw[i]=cv(w[i]);hb[i]=cv(b[i]);}}
  double best=1e9;
  for(int rep=0;rep<5;rep++){ double t0=now();
  for(int i=0;i<reps;i++){
    kb_status s=0;
    if(bf||hf){
      if(!strcmp(k16,"softmax")) s=(bf?kb_softmax_bf16:kb_softmax_f16)(ctx,rows,cols,hx,hy);
      else if(!strcmp(k16,"log_softmax")) s=(bf?kb_log_softmax_bf16:kb_log_softmax_f16)(ctx,rows,cols,hx,hy);
      else if(!strcmp(k16,"layernorm")) s=(bf?kb_layernorm_bf16:kb_layernorm_f16)(ctx,rows,cols,hx,hw,hb,1e-5f,hy);
      else if(!strcmp(k16,"rmsnorm")) s=(bf?kb_rmsnorm_bf16:kb_rmsnorm_f16)(ctx,rows,cols,hx,hw,1e-5f,hy);
      else if(!strcmp(k16,"gelu")) s=(bf?kb_gelu_bf16:kb_gelu_f16)(ctx,n,hx,hy);
      else if(!strcmp(k16,"gelu_tanh")) s=(bf?kb_gelu_tanh_bf16:kb_gelu_tanh_f16)(ctx,n,hx,hy);
      else if(!strcmp(k16,"silu")) s=(bf?kb_silu_bf16:kb_silu_f16)(ctx,n,hx,hy);
      else if(!strcmp(k16,"glu")) s=(bf?kb_glu_bf16:kb_glu_f16)(ctx,rows,cols,hx,cols,hu,cols,KB_ACTIVATION_SILU,hy);
      else {printf("unknown kernel %s\n",k);return 2;}
    }
    else if(!strcmp(k,"layernorm")) s=kb_layernorm(ctx,rows,cols,x,w,b,1e-5f,y);
    else if(!strcmp(k,"rmsnorm")) s=kb_rmsnorm(ctx,rows,cols,x,w,1e-5f,y);
    else if(!strcmp(k,"softmax")) s=kb_softmax(ctx,rows,cols,x,y);
    else if(!strcmp(k,"log_softmax")) s=kb_log_softmax(ctx,rows,cols,x,y);
    else if(!strcmp(k,"ce")) s=kb_cross_entropy(ctx,rows,cols,x,t,-100,l,&ml);
    else if(!strcmp(k,"ce_backward")) s=kb_cross_entropy_backward(ctx,rows,cols,x,t,-100,1.0f,y);
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
  printf("%s %ldx%ld th%d: %.3f ms, %.2f GB/s\n",k,rows,cols,th,best*1e3,(!strcmp(k,"ce")?4.0:!strncmp(k,"glu",3)?12.0:8.0)*n/best/1e9/(bf||hf?2:1));
  return 0;}
