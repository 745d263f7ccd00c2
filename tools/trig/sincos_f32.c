/* tools/trig/sincos_f32.c — a scalar C mirror of vmath.c's sincos_f32 (the same operations in
 * the same order, fmaf where the IR has llvm.fma; build with -ffp-contract=off), for checks the
 * test suite cannot afford. tools/trig/check.py builds it, holds the compiled kernels to it bit
 * for bit on random inputs, then runs check_all: every f32 with |x| < T (every stride-th),
 * max ulp against libm's f64 sin/cos. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const float P1=1.5707963705062866f, P2=-4.371138828673793e-08f, P3=-1.7151245100058819e-15f, TWO_PI=0.63661977236758134f, MAGIC=0x1.8p23f;
#define S1v -1.6666654611e-1f
#define S2v 8.3321608736e-3f
#define S3v -1.9515295891e-4f
#define C1v 4.166664568298827e-2f
#define C2v -1.388731625493765e-3f
#define C3v 2.443315711809948e-5f
static inline uint32_t bits(float d){uint32_t u;memcpy(&u,&d,4);return u;}
static inline float fromb(uint32_t u){float d;memcpy(&d,&u,4);return d;}
float sc32(float x, int want_cos){
  float n=fmaf(x,TWO_PI,MAGIC), j=n-MAGIC; uint32_t q=bits(n)+want_cos;
  float t1=fmaf(-j,P1,x), uh=j*P2, ul=fmaf(j,P2,-uh);
  float s=t1-uh, bb=s-t1, e=(t1-(s-bb))+(-uh-bb);
  float lo=fmaf(-j,P3,e-ul);
  float rh=s+lo, rl=lo-(rh-s);
  float z=rh*rh;
  float v=z*rh, p=fmaf(z,S3v,S2v);
  float zl0=fmaf(rh,rh,-z), vl=fmaf(z,rh,-v);
  float a=fmaf(-v,p,0.5f*rl), b=fmaf(S1v,fmaf(rh,zl0,vl),rl), c=fmaf(z,a,-b), t=fmaf(-v,S1v,c);
  float sn=rh-t;
  float hz=0.5f*z, w=1-hz, zl=fmaf(rh,rh,-z);
  float cr=fmaf(z,fmaf(z,C3v,C2v),C1v);
  float tail=fmaf(z*z,cr,-fmaf(rh,rl,0.5f*zl));
  float cs=w+(((1-w)-hz)+tail);
  float res=(q&1)?cs:sn;
  res=fromb(bits(res)^((q&2)<<30));
  if(!want_cos && x==0) res=x;
  return res;
}

void batch(const float *x, float *out, long n, int want_cos) {
    for (long i = 0; i < n; i++) out[i] = sc32(x[i], want_cos);
}

static double ulp32(double ref, float got) {
    if (isnan(ref)) return isnan(got) ? 0 : 1e9;
    int e;
    frexp(ref, &e);
    if (e - 24 < -149) e = -149 + 24;
    return fabs((double)got - ref) / ldexp(1, e - 24);
}

/* max ulp of sin (want_cos 0) or cos over every stride-th f32 with |x| < T, both signs */
double check_all(float T, unsigned stride, int want_cos, float *at) {
    double mx = 0;
    for (uint32_t u = 0; u < 0x7f800000u; u += stride) {
        float f;
        memcpy(&f, &u, 4);
        if (!(f < T)) break;
        for (int sg = 0; sg < 2; sg++) {
            float x = sg ? -f : f;
            double ref = want_cos ? cos((double)x) : sin((double)x);
            double er = ulp32(ref, sc32(x, want_cos));
            if (er > mx) mx = er, *at = x;
        }
    }
    return mx;
}
