"""Small kernels written in the maxas source language, for the assembler's tests (our own kernels).

Each uses named registers (fixed and ``~``), constant names and a SCHEDULE_BLOCK.
"""

VADD = """\
# Kernel: vadd
# Arch: sm_52
// c[i] = a[i] + b[i] for 128 floats; the host allocates a, b and c in this order from 0x1000
<CONSTANT_MAPPING>
    addr_a : 0x1000
    addr_b : [+ 0x1000 + 128*4 +]
    addr_c : [+ 0x1000 + 2*128*4 +]
</CONSTANT_MAPPING>

<REGISTER_MAPPING>
    0-1  : tid, cta
    2-15 ~ i, off, a, b, sum
</REGISTER_MAPPING>

S2R tid, SR_TID.X;
S2R cta, SR_CTAID.X;
<SCHEDULE_BLOCK>
ISCADD i, cta, tid, 6;          // i = cta*64 + tid
SHL off, i, 2;
LDG a, [off + addr_a];
LDG b, [off + addr_b];
FADD sum, a, b;
STG [off + addr_c], sum;
</SCHEDULE_BLOCK>
EXIT;
"""

def reduction(threads=128):
    """Shared-memory tree reduction: out[cta] = sum of x[cta*threads ...] (fp32, tree order)."""
    steps = []
    s = threads // 2
    while s >= 1:
        steps.append(f"""\
ISETP.LT.AND P0, PT, tid, {s}, PT;
@P0 LDS a, [addr];
@P0 LDS b, [addr + 4x<{s}>];
@P0 FADD a, a, b;
@P0 STS [addr], a;
BAR.SYNC 0;
""")
        s //= 2
    return f"""\
# Kernel: reduce
# SharedSize: [+ {threads} * 4 +]
# Params(2):
#\t0:0x140:4:0 x
#\t1:0x144:4:0 out
<CONSTANT_MAPPING>
    param_x   : c[0x0][0x140]
    param_out : c[0x0][0x144]
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-1  : tid, cta
    4-63 ~ addr, gaddr, v, a, b, oaddr
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
S2R cta, SR_CTAID.X;
<SCHEDULE_BLOCK>
SHL addr, tid, 2;
ISCADD gaddr, cta, addr, [+ 2 + {threads.bit_length() - 1} +];   // cta * threads * 4 + tid * 4
IADD gaddr, gaddr, param_x;
LDG v, [gaddr];
STS [addr], v;
</SCHEDULE_BLOCK>
BAR.SYNC 0;
{''.join(steps)}ISETP.EQ.AND P1, PT, tid, RZ, PT;
@P1 LDS a, [RZ];
@P1 ISCADD oaddr, cta, param_out, 2;
@P1 STG [oaddr], a;
EXIT;
"""

FFMA_CHAIN = """\
# Kernel: ffma_chain
# Params(3):
#\t0:0x140:4:0 x
#\t1:0x144:4:0 y
#\t2:0x148:4:0 out
// four independent FFMA chains per thread: acc_j <- acc_j * x + (y + j), six times each;
// out[4*gid + j] = acc_j, written with one STG.128 of the vector group acc
<CONSTANT_MAPPING>
    param_x   : c[0x0][0x140]
    param_y   : c[0x0][0x144]
    param_out : c[0x0][0x148]
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-1    : tid, cta
    8-11   : acc<0-3>
    12-63  ~ gid, off, px, py, po, x, y, y1, y2, y3
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
S2R cta, SR_CTAID.X;
<SCHEDULE_BLOCK>
ISCADD gid, cta, tid, 5;
SHL off, gid, 2;
IADD px, off, param_x;
IADD py, off, param_y;
LDG x, [px];
LDG y, [py];
ISCADD po, gid, param_out, 4;
MOV acc0, RZ;
MOV acc1, RZ;
MOV acc2, RZ;
MOV acc3, RZ;
FADD y1, y, 1.0;
FADD y2, y, 2.0;
FADD y3, y, 3.0;
</SCHEDULE_BLOCK>
<SCHEDULE_BLOCK>
""" + "".join(f"FFMA acc{j}, acc{j}, x, {('y', 'y1', 'y2', 'y3')[j]};\n" for j in range(4) for _ in range(6)) + """\
</SCHEDULE_BLOCK>
STG.128 [po], acc;
EXIT;
"""

TEX_SUM = """\
# Kernel: tex_sum
# Params(1):
#\t0:0x140:4:0 out
// out[gid] = sum of the 4 channels of texels gid and gid + 1 of texture 0 (float4, border: 0)
<CONSTANT_MAPPING>
    param_out : c[0x0][0x140]
    tex0      : 0x80000000
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-1    : tid, cta
    16-19  : t<0-3>
    20-23  : u<0-3>
    24-63  ~ gid, gid1, handle, s0, s1, s2, s3, s, o
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
S2R cta, SR_CTAID.X;
<SCHEDULE_BLOCK>
MOV32I handle, tex0;
ISCADD gid, cta, tid, 5;
IADD gid1, gid, 1;
TLD.B.LZ.P t, gid, handle, 0x0, 1D, 0xf;
TLD.B.LZ.P u, gid1, handle, 0x0, 1D, 0xf;
FADD s0, t0, u0;
FADD s1, t1, u1;
FADD s2, t2, u2;
FADD s3, t3, u3;
FADD s0, s0, s1;
FADD s2, s2, s3;
FADD s, s0, s2;
ISCADD o, gid, param_out, 2;
STG [o], s;
</SCHEDULE_BLOCK>
EXIT;
"""


SHARED_SUM = """\
# Kernel: shared_sum
# SharedSize: 512
// parameterless (runs under `maxsim run FILE --block 128`): each thread stores its id in shared
// memory; after the barrier threads 0-63 add the word 64 places on and store the sum back
<REGISTER_MAPPING>
    0      : tid
    1-15   ~ addr, a, b
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
<SCHEDULE_BLOCK>
SHL addr, tid, 2;
STS [addr], tid;
</SCHEDULE_BLOCK>
BAR.SYNC 0;
ISETP.LT.AND P0, PT, tid, 64, PT;
@P0 LDS a, [addr];
@P0 LDS b, [addr + 4x<64>];
@P0 IADD a, a, b;
@P0 STS [addr], a;
EXIT;
"""
