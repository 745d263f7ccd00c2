/* ops_table.c — the binding table: every supported torch callable (torch.X,
 * torch.nn.functional.X, Tensor.X) with its Python signature and handler; binding call
 * arguments to a signature; sym_call, the entry point for every call the trace makes.
 *
 * The signature string names parameters in order; names after '|' are keyword-only. A name
 * marked '!' selects an overload of its own: given (by keyword), no other argument may be
 * positional (x.sort(stable=True, dim=0) binds, x.sort(0, stable=True) is eager's TypeError).
 * Anything not in the table fails the trace with a reason (eager fallback).
 */
#include "ops_internal.h"
#include "train.h"

/* fn is torch._dynamo.graph_break (known by its module and qualified name: importing
 * torch._dynamo to compare identities would cost a second and run its setup) */
static int is_dynamo_graph_break(PyObject *fn) {
    if (fn == NULL || !PyFunction_Check(fn))
        return 0;
    PyObject *mod = PyFunction_GET_MODULE(fn), *qn = ((PyFunctionObject *)fn)->func_qualname;
    return mod && qn && PyUnicode_Check(mod) && PyUnicode_Check(qn) &&
           PyUnicode_CompareWithASCIIString(qn, "graph_break") == 0 &&
           PyUnicode_CompareWithASCIIString(mod, "torch._dynamo.decorators") == 0;
}

#define UN(n, w, opc) {n, w, "input,inplace", sym_h_unary, IC_OP_##opc}
#define BIN(n, opc) {n, W_ALL, "input,other", sym_h_binary, IC_OP_##opc}

static const opdef OPS[] = {
    {"add", W_TORCH | W_METHOD, "input,other|alpha", sym_h_add_sub, IC_OP_ADD},
    {"sub", W_TORCH | W_METHOD, "input,other|alpha", sym_h_add_sub, IC_OP_SUB},
    {"subtract", W_TORCH | W_METHOD, "input,other|alpha", sym_h_add_sub, IC_OP_SUB},
    BIN("mul", MUL), BIN("multiply", MUL),
    {"div", W_TORCH | W_METHOD, "input,other|rounding_mode", sym_h_div, IC_OP_DIV},
    {"divide", W_TORCH | W_METHOD, "input,other|rounding_mode", sym_h_div, IC_OP_DIV},
    {"true_divide", W_TORCH | W_METHOD, "input,other|rounding_mode", sym_h_div, IC_OP_DIV},
    BIN("maximum", MAXIMUM), BIN("minimum", MINIMUM),
    {"pow", W_TORCH | W_METHOD, "input,exponent", sym_h_binary, IC_OP_POW},
    BIN("eq", EQ), BIN("ne", NE), BIN("not_equal", NE), BIN("lt", LT), BIN("less", LT),
    BIN("le", LE), BIN("less_equal", LE), BIN("gt", GT), BIN("greater", GT), BIN("ge", GE),
    BIN("greater_equal", GE), BIN("logical_and", LOGICAL_AND), BIN("logical_or", LOGICAL_OR),
    UN("neg", W_TORCH | W_METHOD, NEG), UN("negative", W_TORCH | W_METHOD, NEG),
    UN("abs", W_TORCH | W_METHOD, ABS), UN("exp", W_TORCH | W_METHOD, EXP),
    UN("log", W_TORCH | W_METHOD, LOG), UN("sqrt", W_TORCH | W_METHOD, SQRT),
    UN("rsqrt", W_TORCH | W_METHOD, RSQRT), UN("reciprocal", W_TORCH | W_METHOD, RECIPROCAL),
    UN("sigmoid", W_ALL, SIGMOID), UN("tanh", W_ALL, TANH), UN("relu", W_ALL, RELU),
    UN("silu", W_F | W_FLOATK, SILU), UN("sin", W_TORCH | W_METHOD, SIN), UN("cos", W_TORCH | W_METHOD, COS),
    UN("logical_not", W_TORCH | W_METHOD, LOGICAL_NOT),
    {"square", W_TORCH | W_METHOD, "input", sym_h_square, 0},
    {"gelu", W_ALL | W_FLOATK, "input|approximate", sym_h_gelu, 0},
    {"where", W_TORCH, "condition,input,other", sym_h_where, 0},
    {"where", W_METHOD, "input,condition,other", sym_h_where, 1}, /* x.where(c, y): where(c, x, y) */
    {"clamp", W_TORCH | W_METHOD, "input,min,max", sym_h_clamp, 0},
    {"clip", W_TORCH | W_METHOD, "input,min,max", sym_h_clamp, 0},
    {"clamp_max", W_TORCH | W_METHOD, "input,max", sym_h_clamp, 1},
    {"clamp_min", W_TORCH | W_METHOD, "input,min", sym_h_clamp, 2},
    {"sum", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", sym_h_reduce, IC_OP_SUM},
    {"mean", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", sym_h_reduce, IC_OP_MEAN},
    {"nanmean", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", sym_h_nanmean, 0},
    {"amax", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_reduce, IC_OP_AMAX},
    {"amin", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_reduce, IC_OP_AMIN},
    {"max", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_max_min, IC_OP_MAXIMUM}, /* dim: or other */
    {"min", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_max_min, IC_OP_MINIMUM},
    {"softmax", W_TORCH | W_METHOD, "input,dim,dtype", sym_h_softmax, 0},
    {"softmax", W_F, "input,dim,_stacklevel,dtype", sym_h_softmax, 0},
    {"log_softmax", W_TORCH | W_METHOD, "input,dim,dtype", sym_h_softmax, 1},
    {"log_softmax", W_F, "input,dim,_stacklevel,dtype", sym_h_softmax, 1},
    {"_softmax_backward_data", W_TORCH, "grad_output,output,dim,input_dtype", sym_h_softmax_backward_data, 0},
    {"layer_norm", W_TORCH | W_F, "input,normalized_shape,weight,bias,eps", sym_h_layer_norm, 0},
    {"rms_norm", W_TORCH | W_F, "input,normalized_shape,weight,eps", sym_h_layer_norm, 1},
    {"dropout", W_TORCH | W_F, "input,p,training,inplace", sym_h_dropout, 0},
    /* random ops (ops_random.c): ATen's generator when the graph runs, eager's order */
    {"rand", W_TORCH, "*size|generator,out,dtype,layout,device,pin_memory,requires_grad", sym_h_rand, IC_RND_UNIFORM},
    {"randn", W_TORCH, "*size|generator,out,dtype,layout,device,pin_memory,requires_grad", sym_h_rand, IC_RND_NORMAL},
    {"rand_like", W_TORCH, "input|generator,dtype,layout,device,requires_grad,memory_format", sym_h_rand_like, IC_RND_UNIFORM},
    {"randn_like", W_TORCH, "input|generator,dtype,layout,device,requires_grad,memory_format", sym_h_rand_like, IC_RND_NORMAL},
    {"randint", W_TORCH, "low,high,size|generator,out,dtype,layout,device,pin_memory,requires_grad", sym_h_randint, 0},
    {"randint_like", W_TORCH, "input,low,high|generator,dtype,layout,device,requires_grad,memory_format", sym_h_randint_like, 0},
    {"randperm", W_TORCH, "n|generator,out,dtype,layout,device,pin_memory,requires_grad", sym_h_randperm, 0},
    {"bernoulli", W_TORCH | W_METHOD, "input,p|generator,out", sym_h_bernoulli, 0},
    {"multinomial", W_TORCH | W_METHOD, "input,num_samples,replacement|generator,out", sym_h_multinomial, 0},
    {"normal", W_TORCH, "mean,std,size|generator,out,dtype,layout,device,pin_memory,requires_grad", sym_h_normal, 0},
    {"uniform_", W_METHOD, "input,from,to|generator", sym_h_random_, IC_RND_UNIFORM},
    {"normal_", W_METHOD, "input,mean,std|generator", sym_h_random_, IC_RND_NORMAL},
    {"random_", W_METHOD, "input,from,to|generator", sym_h_random_, IC_RND_RANDINT},
    {"bernoulli_", W_METHOD, "input,p|generator", sym_h_random_, IC_RND_BERNOULLI},
    {"exponential_", W_METHOD, "input,lambd|generator", sym_h_random_, IC_RND_EXPONENTIAL},
    UN("floor", W_TORCH | W_METHOD, FLOOR), UN("ceil", W_TORCH | W_METHOD, CEIL),
    UN("round", W_TORCH | W_METHOD, ROUND), UN("trunc", W_TORCH | W_METHOD, TRUNC),
    UN("sign", W_TORCH | W_METHOD, SIGN), UN("erf", W_TORCH | W_METHOD, ERF),
    UN("log1p", W_TORCH | W_METHOD, LOG1P), UN("expm1", W_TORCH | W_METHOD, EXPM1),
    UN("log2", W_TORCH | W_METHOD, LOG2), UN("exp2", W_TORCH | W_METHOD, EXP2),
    UN("tan", W_TORCH | W_METHOD, TAN), UN("atan", W_TORCH | W_METHOD, ATAN),
    UN("arctan", W_TORCH | W_METHOD, ATAN),
    UN("asin", W_TORCH | W_METHOD, ASIN), UN("arcsin", W_TORCH | W_METHOD, ASIN),
    UN("acos", W_TORCH | W_METHOD, ACOS), UN("arccos", W_TORCH | W_METHOD, ACOS),
    UN("asinh", W_TORCH | W_METHOD, ASINH), UN("arcsinh", W_TORCH | W_METHOD, ASINH),
    UN("acosh", W_TORCH | W_METHOD, ACOSH), UN("arccosh", W_TORCH | W_METHOD, ACOSH),
    UN("atanh", W_TORCH | W_METHOD, ATANH), UN("arctanh", W_TORCH | W_METHOD, ATANH),
    UN("isnan", W_TORCH | W_METHOD, ISNAN), UN("isinf", W_TORCH | W_METHOD, ISINF),
    UN("isfinite", W_TORCH | W_METHOD, ISFINITE), UN("bitwise_not", W_TORCH | W_METHOD, BITWISE_NOT),
    BIN("fmod", FMOD), BIN("remainder", REMAINDER), BIN("floor_divide", FLOOR_DIVIDE),
    BIN("bitwise_and", BITWISE_AND), BIN("bitwise_or", BITWISE_OR), BIN("bitwise_xor", BITWISE_XOR),
    BIN("logical_xor", LOGICAL_XOR), BIN("atan2", ATAN2), BIN("arctan2", ATAN2),
    BIN("bitwise_left_shift", LSHIFT), BIN("bitwise_right_shift", RSHIFT),
    {"prod", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", sym_h_reduce, IC_OP_PROD},
    {"argmax", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_arg, IC_OP_ARGMAX},
    {"argmin", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_arg, IC_OP_ARGMIN},
    {"cat", W_TORCH, "tensors,dim", sym_h_cat, 0},
    {"concat", W_TORCH, "tensors,dim", sym_h_cat, 0},
    {"concatenate", W_TORCH, "tensors,dim", sym_h_cat, 0},
    {"stack", W_TORCH, "tensors,dim", sym_h_cat, 1},
    {"hstack", W_TORCH, "tensors", sym_h_cat, 2},
    {"vstack", W_TORCH, "tensors", sym_h_cat, 3},
    {"row_stack", W_TORCH, "tensors", sym_h_cat, 3},
    {"diagonal", W_TORCH | W_METHOD, "input,offset,dim1,dim2", sym_h_diagonal, 0},
    {"narrow", W_TORCH | W_METHOD, "input,dim,start,length", sym_h_narrow, 0},
    {"select", W_TORCH | W_METHOD, "input,dim,index", sym_h_narrow, 1},
    {"split", W_TORCH | W_METHOD, "tensor,split_size_or_sections,dim", sym_h_split, 0},
    {"chunk", W_TORCH | W_METHOD, "input,chunks,dim", sym_h_split, 1},
    {"index_select", W_TORCH | W_METHOD, "input,dim,index", sym_h_index_select, 0},
    {"embedding", W_F, "input,weight,padding_idx,max_norm,norm_type,scale_grad_by_freq,sparse", sym_h_index_select, 1},
    {"embedding_bag", W_F, "input,weight,offsets,max_norm,norm_type,scale_grad_by_freq,mode,sparse,per_sample_weights,"
     "include_last_offset,padding_idx", sym_h_embedding_bag, 0},
    {"arange", W_TORCH, "start,end,step|dtype,device,layout,out,requires_grad,pin_memory", sym_h_arange, 0},
    {"linspace", W_TORCH, "start,end,steps|dtype,device,layout,out,requires_grad,pin_memory", sym_h_linspace, 0},
    {"eye", W_TORCH, "n,m|dtype,device,layout,requires_grad,pin_memory,out", sym_h_eye, 0},
    {"tensor", W_TORCH, "data|dtype,device,requires_grad,pin_memory", sym_h_tensor, 0},
    {"as_tensor", W_TORCH, "data,dtype,device", sym_h_as_tensor, 0},
    {"scalar_tensor", W_TORCH, "s|dtype,layout,device,pin_memory,requires_grad", sym_h_scalar_tensor, 0},
    {"zeros", W_TORCH, "*size|dtype,device,layout,requires_grad,pin_memory,out", sym_h_factory, 0},
    {"ones", W_TORCH, "*size|dtype,device,layout,requires_grad,pin_memory,out", sym_h_factory, 1},
    {"full", W_TORCH, "size,fill_value|dtype,device,layout,requires_grad,pin_memory,out", sym_h_factory, 2},
    {"zeros_like", W_TORCH, "input|dtype,device,layout,requires_grad,memory_format", sym_h_factory, 3},
    {"ones_like", W_TORCH, "input|dtype,device,layout,requires_grad,memory_format", sym_h_factory, 4},
    {"full_like", W_TORCH, "input,fill_value|dtype,device,layout,requires_grad,memory_format", sym_h_factory, 5},
    {"new_zeros", W_METHOD, "input,*size|dtype,device,requires_grad,layout,pin_memory", sym_h_new_factory, 0},
    {"new_ones", W_METHOD, "input,*size|dtype,device,requires_grad,layout,pin_memory", sym_h_new_factory, 1},
    {"new_full", W_METHOD, "input,size,fill_value|dtype,device,requires_grad,layout,pin_memory", sym_h_new_factory, 2},
    {"new_tensor", W_METHOD, "input,data|dtype,device,requires_grad,layout,pin_memory", sym_h_new_tensor, 0},
    {"new_empty", W_METHOD, "input,*size|dtype,device,requires_grad,layout,pin_memory", sym_h_new_factory, 3},
    /* empty/empty_like: uninitialized in eager, zeros here (any value is eager's) */
    {"empty", W_TORCH, "*size|dtype,device,layout,requires_grad,pin_memory,memory_format,out", sym_h_factory, 0},
    {"empty_like", W_TORCH, "input|dtype,device,layout,requires_grad,memory_format", sym_h_factory, 3},
    {"glu", W_F, "input,dim", sym_h_glu, 0},
    {"softplus", W_F | W_FLOATK, "input,beta,threshold", sym_h_act, 0},
    {"elu", W_F | W_FLOATK, "input,alpha,inplace", sym_h_act, 1},
    {"leaky_relu", W_F | W_FLOATK, "input,negative_slope,inplace", sym_h_act, 2},
    {"hardswish", W_F | W_FLOATK, "input,inplace", sym_h_act, 3},
    {"hardsigmoid", W_F | W_FLOATK, "input,inplace", sym_h_act, 4},
    {"relu6", W_F, "input,inplace", sym_h_act, 5},
    {"hardtanh", W_F, "input,min_val,max_val,inplace", sym_h_act, 6},
    {"mish", W_F | W_FLOATK, "input,inplace", sym_h_act, 7},
    {"logsigmoid", W_F | W_FLOATK, "input", sym_h_act, 8},
    {"selu", W_TORCH | W_F | W_FLOATK, "input,inplace", sym_h_act, 9},
    {"softsign", W_F, "input", sym_h_act, 10},
    {"hardshrink", W_TORCH | W_F | W_METHOD, "input,lambd", sym_h_act, 11},
    {"softshrink", W_F, "input,lambd", sym_h_act, 12},
    {"celu", W_TORCH | W_F, "input,alpha,inplace", sym_h_act, 13},
    {"celu_", W_TORCH, "input,alpha", sym_h_act, 14},
    {"threshold", W_TORCH | W_F, "input,threshold,value,inplace", sym_h_act, 15},
    {"threshold_", W_TORCH, "input,threshold,value", sym_h_act, 16},
    {"var", W_TORCH | W_METHOD, "input,dim,keepdim|unbiased,correction", sym_h_var, 0},
    {"std", W_TORCH | W_METHOD, "input,dim,keepdim|unbiased,correction", sym_h_var, 1},
    {"logsumexp", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_logsumexp, 0},
    {"any", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_anyall, 0},
    {"all", W_TORCH | W_METHOD, "input,dim,keepdim", sym_h_anyall, 1},
    {"_is_any_true", W_TORCH | W_METHOD, "input", sym_h_is_all_true, 0},
    {"_is_all_true", W_TORCH | W_METHOD, "input", sym_h_is_all_true, 1},
    {"norm", W_TORCH | W_METHOD, "input,p,dim,keepdim", sym_h_norm, 0},
    {"vector_norm", W_LINALG, "x,ord,dim,keepdim|dtype,out", sym_h_norm, 1},
    {"norm", W_LINALG, "A,ord,dim,keepdim|dtype,out", sym_h_linalg_norm, 0},
    {"bucketize", W_TORCH, "input,boundaries|out_int32,right,out", sym_h_bucketize, 0},
    {"_weight_norm", W_TORCH, "v,g,dim", sym_h_weight_norm, 0},
    {"meshgrid", W_TORCH, "*tensors|indexing", sym_h_meshgrid, 0},
    {"einsum", W_TORCH, "equation,*operands", sym_h_einsum, 0},
    {"masked_fill", W_TORCH | W_METHOD, "input,mask,value", sym_h_masked_fill, 0},
    {"masked_scatter", W_TORCH | W_METHOD, "input,mask,source", sym_h_masked_scatter, 0},
    {"addcmul", W_TORCH | W_METHOD, "input,tensor1,tensor2|value", sym_h_addc, 0},
    {"addcdiv", W_TORCH | W_METHOD, "input,tensor1,tensor2|value", sym_h_addc, 1},
    {"lerp", W_TORCH | W_METHOD, "input,end,weight", sym_h_addc, 2},
    {"outer", W_TORCH | W_METHOD, "input,vec2", sym_h_outer, 0},
    {"ger", W_TORCH | W_METHOD, "input,vec2", sym_h_outer, 0},
    {"tril", W_TORCH | W_METHOD, "input,diagonal", sym_h_tri, 0},
    {"triu", W_TORCH | W_METHOD, "input,diagonal", sym_h_tri, 1},
    {"flip", W_TORCH | W_METHOD, "input,dims", sym_h_flip, 0},
    {"diff", W_TORCH | W_METHOD, "input,n,dim,prepend,append", sym_h_diff, 0},
    {"roll", W_TORCH | W_METHOD, "input,shifts,dims", sym_h_flip, 1},
    {"batch_norm", W_F, "input,running_mean,running_var,weight,bias,training,momentum,eps", sym_h_batch_norm, 0},
    {"group_norm", W_TORCH | W_F, "input,num_groups,weight,bias,eps", sym_h_group_norm, 0},
    {"instance_norm", W_TORCH, "input,weight,bias,running_mean,running_var,use_input_stats,momentum,eps,cudnn_enabled",
     sym_h_instance_norm, 0},
    {"type_as", W_METHOD, "input,other", sym_h_type_as, 0},
    {"clone", W_TORCH | W_METHOD, "input|memory_format", sym_h_clone, 0},
    {"nan_to_num", W_TORCH | W_METHOD, "input,nan,posinf,neginf", sym_h_nan_to_num, 0},
    {"repeat", W_METHOD, "input,*repeats", sym_h_repeat, 0},
    {"tile", W_METHOD, "input,*dims", sym_h_repeat, 1},
    {"tile", W_TORCH, "input,dims", sym_h_repeat, 1},
    {"repeat_interleave", W_TORCH | W_METHOD, "input,repeats,dim|output_size", sym_h_repeat_interleave, 0},
    {"float", W_METHOD, "input", sym_h_cast, IC_F32},
    {"double", W_METHOD, "input", sym_h_cast, IC_F64},
    {"int", W_METHOD, "input", sym_h_cast, IC_I32},
    {"long", W_METHOD, "input", sym_h_cast, IC_I64},
    {"bool", W_METHOD, "input", sym_h_cast, IC_BOOL},
    {"half", W_METHOD, "input", sym_h_cast, IC_F16},
    {"bfloat16", W_METHOD, "input", sym_h_cast, IC_BF16},
    {"short", W_METHOD, "input", sym_h_cast, IC_I16},
    {"char", W_METHOD, "input", sym_h_cast, IC_I8},
    {"byte", W_METHOD, "input", sym_h_cast, IC_U8},
    {"type", W_METHOD, "input,dtype,non_blocking", sym_h_type, 0},
    {"to", W_METHOD, "input,a,b|dtype,non_blocking,copy,device,memory_format", sym_h_to, 0},
    {"cpu", W_METHOD, "input|memory_format", sym_h_cpu, 0},
    {"reshape", W_TORCH | W_METHOD, "input,*shape", sym_h_reshape, 0},
    {"view", W_METHOD, "input,*shape", sym_h_reshape, 0},
    {"reshape_as", W_METHOD, "input,other", sym_h_reshape_as, 0},
    {"unbind", W_TORCH | W_METHOD, "input,dim", sym_h_unbind, 0},
    {"flatten", W_TORCH | W_METHOD, "input,start_dim,end_dim", sym_h_flatten, 0},
    {"unflatten", W_TORCH | W_METHOD, "input,dim,sizes", sym_h_unflatten, 0},
    {"permute", W_TORCH | W_METHOD, "input,*dims", sym_h_permute, 0},
    {"transpose", W_TORCH | W_METHOD, "input,dim0,dim1", sym_h_transpose, 0},
    {"swapaxes", W_TORCH | W_METHOD, "input,dim0,dim1", sym_h_transpose, 0},
    {"t", W_TORCH | W_METHOD, "input", sym_h_transpose, 1},
    {"unsqueeze", W_TORCH | W_METHOD, "input,dim", sym_h_unsqueeze, 0},
    {"squeeze", W_TORCH | W_METHOD, "input,dim", sym_h_squeeze, 0},
    {"expand", W_METHOD, "input,*sizes", sym_h_expand, 0},
    {"contiguous", W_METHOD, "input", sym_h_identity, 1},
    {"requires_grad_", W_METHOD, "input,requires_grad", sym_h_requires_grad_, 0},
    {"zero_", W_METHOD, "input", sym_h_fill, 0},
    {"fill_", W_METHOD, "input,value", sym_h_fill, 1},
    {"copy_", W_METHOD, "input,src,non_blocking", sym_h_fill, 2},
    {"detach", W_TORCH | W_METHOD, "input", sym_h_identity, 0},
    {"size", W_METHOD, "input,dim", sym_h_size, 0},
    {"dim", W_METHOD, "input", sym_h_size, 1},
    {"ndimension", W_METHOD, "input", sym_h_size, 1},
    {"numel", W_TORCH | W_METHOD, "input", sym_h_size, 2},
    {"matmul", W_TORCH | W_METHOD, "input,other", sym_h_matmul, IC_EXT_MATMUL},
    {"mm", W_TORCH | W_METHOD, "input,mat2", sym_h_matmul, IC_EXT_MM},
    {"bmm", W_TORCH | W_METHOD, "input,mat2", sym_h_matmul, IC_EXT_BMM},
    {"addmm", W_TORCH | W_METHOD, "input,mat1,mat2|beta,alpha", sym_h_addmm, IC_EXT_ADDMM},
    {"baddbmm", W_TORCH | W_METHOD, "input,batch1,batch2|beta,alpha", sym_h_addmm, IC_EXT_BADDBMM},
    {"linear", W_F, "input,weight,bias", sym_h_linear, 0},
    {"conv1d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", sym_h_conv, 1},
    {"conv2d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", sym_h_conv, 2},
    {"conv3d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", sym_h_conv, 3},
    {"conv_transpose1d", W_TORCH | W_F, "input,weight,bias,stride,padding,output_padding,groups,dilation", sym_h_conv_transpose, 1},
    {"conv_transpose2d", W_TORCH | W_F, "input,weight,bias,stride,padding,output_padding,groups,dilation", sym_h_conv_transpose, 2},
    {"conv_transpose3d", W_TORCH | W_F, "input,weight,bias,stride,padding,output_padding,groups,dilation", sym_h_conv_transpose, 3},
    {"_native_multi_head_attention", W_TORCH | W_PF, /* masks, need_weights: the polyfill */
     "query,key,value,embed_dim,num_head,qkv_weight,qkv_bias,proj_weight,proj_bias,mask,need_weights,average_attn_weights,mask_type",
     sym_h_native_mha, 0},
    {"_transformer_encoder_layer_fwd", W_TORCH | W_PF,
     "src,embed_dim,num_heads,qkv_weight,qkv_bias,proj_weight,proj_bias,use_gelu,norm_first,eps,norm_weight_1,"
     "norm_bias_1,norm_weight_2,norm_bias_2,ffn_weight_1,ffn_bias_1,ffn_weight_2,ffn_bias_2,mask,mask_type",
     sym_h_encoder_layer, 0},
    {"scaled_dot_product_attention", W_F, "query,key,value,attn_mask,dropout_p,is_causal|scale,enable_gqa",
     sym_h_sdpa, 0},
    {"matrix_exp", W_TORCH | W_METHOD, "input", sym_h_linalg, IC_EXT_MATRIX_EXP},
    {"matrix_exp", W_LINALG, "A", sym_h_linalg, IC_EXT_MATRIX_EXP},
    {"solve", W_LINALG, "A,B|left", sym_h_linalg, IC_EXT_SOLVE},
    {"solve_triangular", W_LINALG, "A,B|upper,left,unitriangular,out", sym_h_solve_triangular, 0},
    {"gather", W_TORCH | W_METHOD, "input,dim,index|sparse_grad", sym_h_gather, IC_EXT_GATHER},
    {"take_along_dim", W_TORCH | W_METHOD, "input,indices,dim", sym_h_take_along_dim, 0},
    {"index_put", W_TORCH | W_METHOD, "input,indices,values,accumulate", sym_h_index_put, 0},
    {"index_put_", W_TORCH | W_METHOD, "input,indices,values,accumulate", sym_h_index_put, 1},
    {"put", W_TORCH | W_METHOD, "input,index,source,accumulate", sym_h_put, 0},
    {"put_", W_METHOD, "input,index,source,accumulate", sym_h_put, 1},
    {"scatter", W_TORCH | W_METHOD, "input,dim,index,src|reduce,value", sym_h_gather, IC_EXT_SCATTER},
    {"scatter_add", W_TORCH | W_METHOD, "input,dim,index,src", sym_h_gather, IC_EXT_SCATTER_ADD},
    {"scatter_reduce", W_TORCH | W_METHOD, "input,dim,index,src,reduce|include_self", sym_h_scatter_reduce, 0},
    {"cumsum", W_TORCH | W_METHOD, "input,dim|dtype", sym_h_cumsum, IC_EXT_CUMSUM},
    {"cumprod", W_TORCH | W_METHOD, "input,dim|dtype", sym_h_cumsum, IC_EXT_CUMPROD},
    {"argsort", W_TORCH | W_METHOD, "input,dim,descending|!stable", sym_h_argsort, 0},
    {"msort", W_TORCH | W_METHOD, "input", sym_h_argsort, 1},
    {"sort", W_TORCH | W_METHOD, "input,dim,descending|!stable", sym_h_sort, 0},
    {"kthvalue", W_TORCH | W_METHOD, "input,k,dim,keepdim", sym_h_select, 0},
    {"median", W_TORCH | W_METHOD | W_PF, "input,dim,keepdim", sym_h_select, 1}, /* of all: the polyfill */
    {"nanmedian", W_TORCH | W_METHOD | W_PF, "input,dim,keepdim", sym_h_select, 2},
    {"topk", W_TORCH | W_METHOD, "input,k,dim,largest,sorted", sym_h_sort, 1},
    {"max_pool1d", W_TORCH | W_F, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices", sym_h_max_pool, 1},
    {"max_pool2d", W_TORCH | W_F, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices", sym_h_max_pool, 2},
    {"avg_pool1d", W_TORCH | W_F, "input,kernel_size,stride,padding,ceil_mode,count_include_pad", sym_h_avg_pool, 1},
    {"avg_pool2d", W_F, "input,kernel_size,stride,padding,ceil_mode,count_include_pad,divisor_override", sym_h_avg_pool, 2},
    {"adaptive_avg_pool1d", W_TORCH | W_F, "input,output_size", sym_h_adaptive_pool, 1},
    {"adaptive_avg_pool2d", W_F, "input,output_size", sym_h_adaptive_pool, 2},
    {"adaptive_max_pool1d", W_F, "input,output_size,return_indices", sym_h_adaptive_pool, 5},
    {"adaptive_max_pool2d", W_F, "input,output_size,return_indices", sym_h_adaptive_pool, 6},
    {"pad", W_F, "input,pad,mode,value", sym_h_pad, 0},
    {"cross_entropy", W_F, "input,target,weight,size_average,ignore_index,reduce,reduction,label_smoothing",
     sym_h_cross_entropy, 0},
    {"nll_loss", W_F, "input,target,weight,size_average,ignore_index,reduce,reduction", sym_h_nll_loss, 0},
    {"mse_loss", W_F, "input,target,size_average,reduce,reduction,weight", sym_h_pointwise_loss, 0},
    {"l1_loss", W_F, "input,target,size_average,reduce,reduction,weight", sym_h_pointwise_loss, 1},
    {"smooth_l1_loss", W_F, "input,target,size_average,reduce,reduction,beta", sym_h_pointwise_loss, 2},
    {"huber_loss", W_F, "input,target,reduction,delta,weight", sym_h_pointwise_loss, 3},
    {"binary_cross_entropy_with_logits", W_F, "input,target,weight,size_average,reduce,reduction,pos_weight",
     sym_h_bce, 0},
    {"binary_cross_entropy", W_F, "input,target,weight,size_average,reduce,reduction", sym_h_bce, 1},
    {"broadcast_tensors", W_TORCH, "*tensors", sym_h_broadcast_tensors, 0},
    {"unfold", W_F, "input,kernel_size,dilation,padding,stride", sym_h_unfold, 0},
    {"fold", W_F, "input,output_size,kernel_size,dilation,padding,stride", sym_h_fold, 0},
    {"unfold", W_METHOD, "input,dimension,size,step", sym_h_tensor_unfold, 0},
    /* ops_more.c */
    {"is_floating_point", W_TORCH | W_METHOD, "input", sym_h_query, 0},
    {"is_complex", W_TORCH | W_METHOD, "input", sym_h_query, 1},
    {"is_contiguous", W_METHOD, "input|memory_format", sym_h_query, 2},
    {"stride", W_METHOD, "input,dim", sym_h_query, 3},
    {"element_size", W_METHOD, "input", sym_h_query, 4},
    {"get_device", W_METHOD, "input", sym_h_query, 5},
    {"is_same_size", W_METHOD, "input,other", sym_h_query, 6},
    {"is_signed", W_TORCH | W_METHOD, "input", sym_h_query, 7},
    {"nelement", W_METHOD, "input", sym_h_size, 2},
    {"broadcast_to", W_TORCH | W_METHOD, "input,*size", sym_h_shape_like, 0},
    {"expand_as", W_METHOD, "input,other", sym_h_shape_like, 1},
    {"view_as", W_METHOD, "input,other", sym_h_shape_like, 2},
    {"movedim", W_TORCH | W_METHOD, "input,source,destination", sym_h_movedim, 0},
    {"moveaxis", W_TORCH | W_METHOD, "input,source,destination", sym_h_movedim, 0},
    {"tensor_split", W_TORCH | W_METHOD, "input,indices_or_sections,dim", sym_h_tensor_split, 0},
    {"one_hot", W_F, "tensor,num_classes", sym_h_one_hot, 0},
    {"histc", W_TORCH | W_METHOD, "input,bins,min,max|out", sym_h_histc, 0},
    {"index_fill", W_TORCH | W_METHOD, "input,dim,index,value", sym_h_index_fill, 0},
    {"index_add", W_TORCH | W_METHOD, "input,dim,index,source|alpha", sym_h_index_add, 0},
    {"index_copy", W_TORCH | W_METHOD, "input,dim,index,source", sym_h_index_add, 1},
    {"count_nonzero", W_TORCH | W_METHOD, "input,dim", sym_h_count_nonzero, 0},
    {"grouped_mm", W_F, "mat_a,mat_b|offs,bias,out_dtype", sym_h_grouped_mm, 0},
    {"_grouped_mm", W_TORCH, "input,mat2,offs,bias,out_dtype", sym_h_grouped_mm, 0},
    {"channel_shuffle", W_TORCH | W_F, "input,groups", sym_h_channel_shuffle, 0},
    {"native_channel_shuffle", W_TORCH, "input,groups", sym_h_channel_shuffle, 0},
    /* ops_models.c */
    {"result_type", W_TORCH, "tensor,other", sym_h_result_type, 0},
    {"as_strided", W_TORCH | W_METHOD, "input,size,stride,storage_offset", sym_h_as_strided, 0},
    {"grid_sampler", W_TORCH, "input,grid,interpolation_mode,padding_mode,align_corners", sym_h_grid_sampler, 0},
    {"affine_grid_generator", W_TORCH, "theta,size,align_corners", sym_h_affine_grid_generator, 0},
    {"interpolate", W_F, "input,size,scale_factor,mode,align_corners,recompute_scale_factor,antialias", sym_h_interpolate, 0},
};
#undef UN
#undef BIN
#define NOPS ((int)(sizeof OPS / sizeof OPS[0]))

/* torch callables recognized by identity (sym_ops_init) */
sym_torch_refs sym_refs;

static PyObject *func_table;   /* callable → op index */
static PyObject *method_table; /* name → op index */

int sym_func_op(PyObject *callable) {
    if (func_table == NULL)
        return -1;
    PyObject *v = PyDict_GetItemWithError(func_table, callable);
    if (v == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return -1;
    }
    return (int)PyLong_AsLong(v);
}

static PyObject *alias_fns; /* the callables dh_alias_op registered (a list, kept) */

/* A callable outside torch that computes the op named `name` (its first table entry):
 * torchc._C.matrix_exp, the eager fast path of torchc.manifolds, is captured as that op. */
int dh_alias_op(PyObject *fn, const char *name) {
    for (int i = 0; i < NOPS && func_table; i++) {
        if (strcmp(OPS[i].name, name))
            continue;
        PyObject *idx = PyLong_FromLong(i);
        int rc = idx ? PyDict_SetItem(func_table, fn, idx) : -1;
        Py_XDECREF(idx);
        if (rc == 0 && alias_fns == NULL && (alias_fns = PyList_New(0)) == NULL)
            return -1;
        return rc < 0 ? rc : PyList_Append(alias_fns, fn);
    }
    PyErr_Format(PyExc_KeyError, "torchc: no op named %s", name);
    return -1;
}

/* fn was made an op's callable by dh_alias_op (not torch's own) */
int dh_alias_of(PyObject *fn) {
    if (alias_fns == NULL)
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(alias_fns); i++)
        if (PyList_GET_ITEM(alias_fns, i) == fn)
            return 1;
    return 0;
}

int sym_method_op(PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(method_table, name);
    if (v == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return -1;
    }
    return (int)PyLong_AsLong(v);
}

int sym_ops_init(void) {
    PyObject *torch = NULL, *F = NULL, *linalg = NULL;
    func_table = PyDict_New();
    method_table = PyDict_New();
    if (!func_table || !method_table)
        return -1;
    torch = PyImport_ImportModule("torch");
    F = PyImport_ImportModule("torch.nn.functional");
    if (!torch || !F)
        goto error;
    linalg = PyImport_ImportModule("torch.linalg");
    if (linalg == NULL)
        goto error;
    {
        PyObject *C = PyObject_GetAttrString(torch, "_C");
        static const char *q[3] = {"_is_tracing", "_get_tracing_state", "_len_torch_dispatch_stack"};
        static const char *l[2] = {"_log_api_usage_once", "_log_api_usage_metadata"};
        static const char *h[3] = {"_has_torch_function", "_has_torch_function_unary",
                                   "_has_torch_function_variadic"};
        for (int i = 0; C && i < 3; i++)
            sym_refs.tracing_query[i] = PyObject_GetAttrString(C, q[i]);
        for (int i = 0; C && i < 2; i++)
            sym_refs.usage_log[i] = PyObject_GetAttrString(C, l[i]);
        for (int i = 0; C && i < 3; i++)
            sym_refs.tf_query[i] = PyObject_GetAttrString(C, h[i]);
        sym_refs.tf_probe = PyObject_CallMethod(torch, "empty", "i", 0);
        sym_refs.autocast_query = PyObject_GetAttrString(torch, "is_autocast_enabled");
        sym_refs.tensor_type = PyObject_GetAttrString(torch, "Tensor");
        sym_refs.grad_query = PyObject_GetAttrString(torch, "is_grad_enabled");
        Py_XDECREF(C);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError); /* missing ones stay NULL: calls to them break as before */
    }
    for (int i = 0; i < NOPS; i++) {
        PyObject *idx = PyLong_FromLong(i);
        if (idx == NULL)
            goto error;
        PyObject *mods[3] = {torch, F, linalg};
        unsigned bits[3] = {W_TORCH, W_F, W_LINALG};
        for (int k = 0; k < 3; k++) {
            if (!(OPS[i].where & bits[k]))
                continue;
            PyObject *fn = PyObject_GetAttrString(mods[k], OPS[i].name);
            if (fn == NULL) {
                (void)tc_clear_expected(PyExc_AttributeError);
                continue;
            }
            int rc = PyDict_Contains(func_table, fn) ? 0 : PyDict_SetItem(func_table, fn, idx);
            Py_DECREF(fn);
            if (rc < 0) {
                Py_DECREF(idx);
                goto error;
            }
        }
        if (OPS[i].where & W_METHOD) {
            if (PyDict_GetItemString(method_table, OPS[i].name) == NULL &&
                PyDict_SetItemString(method_table, OPS[i].name, idx) < 0) {
                Py_DECREF(idx);
                goto error;
            }
        }
        Py_DECREF(idx);
    }
    Py_DECREF(torch);
    Py_DECREF(F);
    Py_DECREF(linalg);
    return 0;
error:
    Py_XDECREF(torch);
    Py_XDECREF(F);
    Py_XDECREF(linalg);
    return -1;
}

/* ---- binding arguments to a signature ------------------------------------------- */

static int bind(trace *t, const opdef *d, var *args, int nargs, PyObject *kwnames, var *kwv,
                var **slots, var *packed) {
    char names[MAXP][24];
    int np = 0, kwonly_from = MAXP, star = -1, alone = -1;
    const char *s = d->sig;
    while (*s && np < MAXP) {
        if (*s == '|') {
            kwonly_from = np;
            s++;
            continue;
        }
        int k = 0;
        if (*s == '*') {
            star = np;
            s++;
        }
        if (*s == '!') {
            alone = np;
            s++;
        }
        while (*s && *s != ',' && *s != '|' && k < 23)
            names[np][k++] = *s++;
        names[np][k] = 0;
        np++;
        if (*s == ',')
            s++;
    }
    for (int i = 0; i < MAXP; i++)
        slots[i] = NULL;
    int npos = nargs;
    if (star >= 0) {
        /* *name packs the remaining positionals into one SEQ */
        int rest = nargs - star;
        if (rest < 0)
            rest = 0;
        var *items = sym_alloc(t, rest);
        if (items == NULL)
            return -1;
        for (int i = 0; i < rest; i++)
            items[i] = args[star + i];
        *packed = sym_var(V_SEQ);
        packed->n = rest;
        packed->items = items;
        slots[star] = packed;
        npos = star < nargs ? star : nargs;
    } else if (nargs > (kwonly_from < np ? kwonly_from : np)) {
        return sym_fail(t, "%s: too many positional arguments", d->name);
    }
    for (int i = 0; i < npos; i++)
        slots[i] = &args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int found = -1;
        for (int i = 0; i < np; i++)
            if (strcmp(names[i], kn) == 0)
                found = i;
        /* torch's Tensor methods call the first parameter 'self' or 'input' */
        if (found < 0 && strcmp(kn, "self") == 0)
            found = 0;
        /* torch.* and Tensor methods (C bindings) take NumPy's names: axis for dim,
         * keepdims for keepdim (F.* are Python functions: no aliases) */
        const char *alias = !strcmp(kn, "axis") ? "dim" : !strcmp(kn, "keepdims") ? "keepdim" : NULL;
        for (int i = 0; found < 0 && alias && !(d->where & W_F) && i < np; i++)
            if (strcmp(names[i], alias) == 0)
                found = i;
        if (found >= 0 && found == star && packed->n == 0 && slots[found] == packed) {
            /* torch.zeros(size=(2, 3)), x.view(shape=...): the keyword is the whole packed
             * sequence, as one positional sequence would be */
            var *one = sym_alloc(t, 1);
            if (one == NULL)
                return -1;
            one[0] = kwv[k];
            packed->n = 1;
            packed->items = one;
            continue;
        }
        if (found < 0 || found == star)
            return sym_fail(t, "%s: unsupported keyword argument '%s'", d->name, kn);
        if (slots[found] != NULL)
            return sym_fail(t, "%s: argument '%s' given twice", d->name, kn);
        slots[found] = &kwv[k];
    }
    if (slots[0] == NULL)
        return sym_fail(t, "%s: missing first argument", d->name);
    if (alone >= 0 && slots[alone] != NULL && npos > 1)
        return sym_fail(t, "%s: '%s' with positional arguments (eager raises TypeError)", d->name, names[alone]);
    /* x.view(), x.expand(), torch.zeros(): no size at all (not an empty one) is eager's
     * TypeError (missing positional argument), also on a 0-d tensor */
    if (star >= 0 && slots[star] == packed && packed->n == 0 && strcmp(names[star], "tensors") != 0 &&
        strcmp(names[star], "operands") != 0)
        return sym_fail(t, "%s() without '%s' (eager raises TypeError)", d->name, names[star]);
    return 0;
}

/* handlers whose graph values are pointwise in their tensor operands, or that read only their
 * dtype and device: held to sym_vmap.c's rules on what they build, not refused outright */
static int vmap_pointwise(const opdef *d) {
    return d->fn == sym_h_binary || d->fn == sym_h_add_sub || d->fn == sym_h_div || d->fn == sym_h_unary ||
           d->fn == sym_h_where || d->fn == sym_h_clamp || d->fn == sym_h_square || d->fn == sym_h_gelu ||
           d->fn == sym_h_cast || d->fn == sym_h_to || d->fn == sym_h_type_as || d->fn == sym_h_new_factory;
}

/* the device of a new value v of an op: the one its factory was made on (h), or, for a value
 * its tensor operands do not give a device (x.new_zeros(n), torch.zeros_like(x): made from
 * numbers in the graph), theirs when they all live on one other device than the graph's */
static int new_value_home(trace *t, var **slots, int h, ic_val v) {
    if (h)
        return sym_home_set(t, v, h);
    if (sym_home(t, v) != HOME_NEUTRAL)
        return 0;
    int off = 0;
    for (int i = 0; i < MAXP; i++) {
        if (slots[i] == NULL || slots[i]->kind != V_TENSOR || slots[i]->val < 0)
            continue;
        int hi = sym_home(t, slots[i]->val);
        if (hi <= HOME_NEUTRAL)
            continue;
        if (!sym_home_off(t, slots[i]->val) || (off && off != hi))
            return 0;
        off = hi;
    }
    return off ? sym_home_set(t, v, off) : 0;
}

/* the position of parameter name in signature sig, or -1 */
static int sig_index(const char *sig, const char *name) {
    size_t n = strlen(name);
    for (int i = 0; *sig; i++) {
        sig += strspn(sig, "|*!");
        size_t k = strcspn(sig, ",|");
        if (k == n && strncmp(sig, name, n) == 0)
            return i;
        sig += k;
        if (*sig == ',')
            sig++;
    }
    return -1;
}

/* callee (a torch.nn.functional Python function, torch's builtin, NULL: a Tensor method) takes
 * an inplace argument: F.relu(x, inplace=True) does, torch.relu, x.relu, F.sigmoid do not
 * (eager's TypeError), though one table entry binds them all; another callable: assumed */
static int takes_inplace(PyObject *callee) {
    if (callee == NULL || PyCFunction_Check(callee) || Py_IS_TYPE(callee, &PyMethodDescr_Type))
        return 0;
    if (!PyFunction_Check(callee))
        return 1;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(callee);
    if (co->co_flags & CO_VARKEYWORDS)
        return 1;
    for (int i = 0; i < co->co_argcount + co->co_kwonlyargcount; i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(co->co_localsplusnames, i), "inplace") == 0)
            return 1;
    return 0;
}

/* callee: the function called (borrowed), or NULL for a Tensor method (args[0] is self; a
 * method descriptor, Tensor.flip(x, 1), binds as one) */
static int call_op(trace *t, int opi, var *args, int nargs, PyObject *kwnames, var *kwv, var *out,
                   PyObject *callee) {
    const opdef *d = &OPS[opi];
    var *slots[MAXP];
    var packed;
    ic_dtype cast_to = IC_F32;
    int policy = dh_tl_autocast && dh_autocast_op_affected(d->name) ? dh_autocast_policy(t, d->name, &cast_to) : 0;
    if (policy < 0) /* casts under autocast: eager's (autocast.c) */
        return sym_fail(t, "autocast is enabled and %s casts under it (not captured)", d->name);
    if (bind(t, d, args, nargs, kwnames, kwv, slots, &packed) < 0)
        return -1;
    int ip = sig_index(d->sig, "inplace");
    if (ip >= 0 && slots[ip] != NULL && !takes_inplace(callee))
        return sym_fail(t, "%s() got an unexpected argument 'inplace' (eager raises TypeError)", d->name);
    /* Tensor.flip(*dims) takes ints as positional arguments (x.flip(1)); torch.flip and a dims=
     * keyword take an int[] only (eager's TypeError for torch.flip(x, 1)) */
    if (d->fn == sym_h_flip && d->op == 0 && slots[1] != NULL && slots[1]->kind == V_CONST &&
        PyLong_Check(slots[1]->obj) &&
        !((callee == NULL || Py_IS_TYPE(callee, &PyMethodDescr_Type)) && nargs >= 2)) /* Tensor.flip(x, 1) */
        return sym_fail(t, "flip(): argument 'dims' must be tuple of ints, not int (eager raises TypeError)");
    if (t->vm_depth > 0 && !vmap_pointwise(d)) { /* inside a torch.vmap'd function (sym_vmap.c) */
        for (int i = 0; i < MAXP; i++)
            if (slots[i] != NULL && sym_vmap_gate(t, d->name, slots[i], 1) < 0)
                return -1;
    } else if (t->vm_depth > 0 && sym_vmap_align(t, slots, MAXP) < 0) {
        return -1;
    }
    for (int i = 0; policy == 1 && i < MAXP; i++)
        if (slots[i] != NULL && slots[i] != &packed && dh_autocast_arg(t, slots[i], cast_to, &slots[i]) < 0)
            return -1;
    /* constants and tensors on another device: eager's rules (fold.c) */
    int moves = d->fn == sym_h_to || d->fn == sym_h_type_as; /* to another device: the handler's */
    if (sym_fold_check_slots(t, slots, MAXP, moves ? 3 : vmap_pointwise(d)) < 0)
        return -1;
    if ((d->where & W_FLOATK) && slots[0] != NULL && slots[0]->kind == V_TENSOR) {
        const ic_dtype dt = sym_metap(t, slots[0]->val)->dtype;
        if (dt != IC_F16 && dt != IC_BF16 && dt != IC_F32 && dt != IC_F64 && !ic_dtype_is_complex(dt))
            return sym_fail(t, "%s of a %s tensor: ATen's kernel is for floating types only (eager raises "
                               "NotImplementedError)", d->name, ic_dtype_name(dt));
    }
    int fac_ok = t->fac_ok, fac_home = t->fac_home;
    ic_val n0 = ic_graph_num_values(t->g);
    t->fac_ok = 1; /* a factory of the CPU in a CUDA graph: its value tagged (sym_factory_device) */
    t->fac_home = 0;
    int rc = d->fn(t, d, slots, out);
    int h = t->fac_home;
    t->fac_ok = fac_ok;
    t->fac_home = fac_home;
    if (rc == 0 && out->kind == V_TENSOR && out->val >= n0)
        rc = new_value_home(t, slots, h, out->val);
    return rc;
}

/* x.name(args...) where name is the op opi: the op called with x as its first argument */
static int call_method_op(trace *t, int opi, const var *self, const var *args, int npos, PyObject *kwnames,
                          var *kwv, var *out) {
    var *all = sym_alloc(t, npos + 1);
    if (all == NULL)
        return -1;
    all[0] = *self;
    for (int i = 0; i < npos; i++)
        all[i + 1] = args[i];
    return call_op(t, opi, all, npos + 1, kwnames, kwv, out, NULL);
}

/* an immutable constant: None, bool, int, float, str, a tuple of them */
static int immutable_const(PyObject *o, int depth) {
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o))
        return 1;
    if (PyTuple_CheckExact(o) && depth < 4) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (!immutable_const(PyTuple_GET_ITEM(o, i), depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

/* A functools.lru_cache'd function called with constant arguments (transformers'
 * is_torch_*_available, is_fsdp_managed_module's checks): called here, its result (an
 * immutable constant) is what eager's call returns from the cache. A cached function is
 * taken to be pure, as the cache itself assumes. 1: not such a call. */
static PyObject *lru_type;

/* fn an lru_cache wrapper (the type found once); 0 where functools lacks it */
static int is_lru_wrapper(PyObject *fn) {
    if (lru_type == NULL) {
        PyObject *ft = PyImport_ImportModule("functools");
        lru_type = ft ? PyObject_GetAttrString(ft, "_lru_cache_wrapper") : NULL; /* kept */
        Py_XDECREF(ft);
        if (lru_type == NULL) {
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return 0;
        }
    }
    return fn != NULL && (PyObject *)Py_TYPE(fn) == lru_type;
}

int sym_is_lru_wrapper(PyObject *fn) { return is_lru_wrapper(fn); }

/* fn: the wrapper called as a function (V_OBJ), or as a method of an object of the trace
 * (V_METHOD from sym_attr.c: self first, an object with a source, identity-guarded, hashed
 * by identity as the cache key holds it) */
static int lru_cached_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (!is_lru_wrapper(fn->obj) || nargs > 15)
        return 1;
    PyObject *argv[18];
    int k = 1;
    if (fn->kind == V_METHOD) {
        const var *self = &fn->items[0];
        if (self->kind == V_OBJ && self->src >= 0 && self->obj != NULL &&
            Py_TYPE(self->obj)->tp_hash == PyBaseObject_Type.tp_hash &&
            Py_TYPE(self->obj)->tp_richcompare == PyBaseObject_Type.tp_richcompare) {
            /* the real object as eager's call sees it: not one made in the trace (a fresh
             * object each call, a new cache key), nor one whose attributes the trace wrote */
            if (t->src[self->src].kind == DH_S_NEW)
                return sym_fail(t, "lru_cache'd method of an object made in the trace");
            for (int i = 0; i < t->nattrw; i++)
                if (t->attrw[i].obj == self->obj)
                    return sym_fail(t, "lru_cache'd method of an object whose attributes the trace wrote");
            argv[k++] = self->obj;
        }
        else if (self->kind == V_CONST && immutable_const(self->obj, 0))
            argv[k++] = self->obj;
        else
            return sym_fail(t, "lru_cache'd method of an object hashed by value");
    }
    for (int i = 0; i < nargs; i++) {
        if (args[i].kind != V_CONST || !immutable_const(args[i].obj, 0))
            return sym_fail(t, "lru_cache'd function called with non-constant arguments");
        argv[k++] = args[i].obj;
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *r = PyObject_Vectorcall(fn->obj, argv + 1, (size_t)(k - 1 - nkw) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      kwnames);
    if (r == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        return sym_fail(t, "lru_cache'd function raised (eager will raise)");
    }
    if (!immutable_const(r, 0)) {
        Py_DECREF(r);
        return sym_fail(t, "lru_cache'd function returned a mutable or non-constant value");
    }
    return sym_const(t, r, out);
}

int sym_call(trace *t, const var *fn_in, var *args, int nargs, PyObject *kwnames, var *out) {
    var fnv = *fn_in, *fn = &fnv;
    for (int i = 0; i < nargs; i++)
        sym_resolve(t, &args[i]);
    if (fn->kind == V_FUNC && fn->op == SYM_VMAP)
        return sym_vmap_call(t, fn, args, nargs, kwnames, out);
    if (fn->kind == V_CONST && fn->obj != NULL) {
        /* Tensor.add / Tensor.__getitem__ / Tensor.shape.__get__ called as functions (a
         * TorchFunctionMode's func: sym_tfm.c) */
        int rc = sym_tfm_tensor_callable(t, fn, args, nargs, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION) {
        int rc = sym_vmap_make(t, fn, args, nargs, kwnames, out); /* torch.vmap(f, ...) (sym_vmap.c) */
        if (rc != 1)
            return rc;
    }
    /* torch.compiler.is_compiling() & co answer True inside the capture (variables.c's
     * predicates), as under torch.compile */
    if (fn->kind == V_METHOD && fn->items) {
        var *self = sym_alloc(t, 1);
        if (self == NULL)
            return -1;
        *self = fn->items[0];
        sym_resolve(t, self);
        fn->items = self;
        if (fn->obj != NULL && !PyUnicode_Check(fn->obj) && is_lru_wrapper(fn->obj))
            return lru_cached_call(t, fn, args, nargs, kwnames, out); /* obj.m() of a cached method */
    }
    if ((fn->kind == V_METHOD || fn->kind == V_FUNC) && fn->obj && !PyFunction_Check(fn->obj) &&
        !PyUnicode_Check(fn->obj)) {
        int rc = sym_obj_slot_call(t, fn, args, nargs, kwnames, out); /* obj_attrs.c: object.__setattr__ & co */
        if (rc != 1)
            return rc;
    }
    if ((fn->kind == V_METHOD || fn->kind == V_FUNC) && fn->obj && PyFunction_Check(fn->obj)) {
        int rc = sym_module_to_call(t, fn, args, nargs, kwnames, out); /* ops_modto.c */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_CONST && fn->obj && PyMethod_Check(fn->obj) && tc_is_autograd_function(PyMethod_GET_SELF(fn->obj)) &&
        (!tc_grad_enabled() || t->nograd > 0)) {
        int r = dh_autograd_function_nograd(t, PyMethod_GET_SELF(fn->obj), PyMethod_GET_FUNCTION(fn->obj), args,
                                            nargs, kwnames, out); /* autograd_fn.c */
        if (r <= 0)
            return r;
    }
    if (fn->kind == V_CONST && fn->obj && PyMethod_Check(fn->obj) && tc_is_autograd_function(PyMethod_GET_SELF(fn->obj))) {
        int r = dh_autograd_function(t, PyMethod_GET_SELF(fn->obj), PyMethod_GET_FUNCTION(fn->obj), args, nargs,
                                     kwnames, out); /* autograd_fn.c: forward and backward captured */
        if (r <= 0)
            return r;
    }
    if (fn->kind == V_CONST && fn->obj && PyMethod_Check(fn->obj) && tc_is_autograd_function(PyMethod_GET_SELF(fn->obj)))
        return sym_fail(t, "torch.autograd.Function %s.apply: its forward and backward run eagerly (not captured)",
                        ((PyTypeObject *)PyMethod_GET_SELF(fn->obj))->tp_name); /* a graph break: csrc/train.c */
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - nkw;
    var *kwv = args + npos;
    PyObject *wself = NULL; /* "a".__add__ & co (sym_attr.c): a method-wrapper of a str/tuple/frozenset */
    if (fn->kind == V_CONST && !strcmp(Py_TYPE(fn->obj)->tp_name, "method-wrapper")) {
        wself = PyObject_GetAttrString(fn->obj, "__self__");
        if (wself == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        else
            Py_DECREF(wself); /* alive: the wrapper holds it */
    }
    if (fn->kind == V_CONST &&
        ((wself != NULL && (PyUnicode_CheckExact(wself) || PyTuple_CheckExact(wself) || PyFrozenSet_CheckExact(wself))) ||
         (PyCFunction_Check(fn->obj) && PyCFunction_GET_SELF(fn->obj) != NULL &&
          (PyUnicode_CheckExact(PyCFunction_GET_SELF(fn->obj)) || PyTuple_CheckExact(PyCFunction_GET_SELF(fn->obj)) ||
           PyAnySet_CheckExact(PyCFunction_GET_SELF(fn->obj)) ||
           !strcmp(Py_TYPE(PyCFunction_GET_SELF(fn->obj))->tp_name, "torch.Size") ||
           !strcmp(Py_TYPE(PyCFunction_GET_SELF(fn->obj))->tp_name, "re.Match") ||
           !strcmp(Py_TYPE(PyCFunction_GET_SELF(fn->obj))->tp_name, "re.Pattern"))))) {
        /* "abc".startswith(...), (1, 2).index(...): pure on constants */
        PyObject *tup = PyTuple_New(npos), *kw = NULL;
        if (tup == NULL)
            return -1;
        for (int i = 0; i < nargs; i++) {
            if (args[i].kind == V_SEQ && args[i].obj == NULL && i < npos) {
                /* ",".join([...]) of constants: the sequence as a tuple/list of them */
                PyObject *sq = args[i].is_list ? PyList_New(args[i].n) : PyTuple_New(args[i].n);
                for (int k = 0; sq && k < args[i].n; k++) {
                    if (args[i].items[k].kind != V_CONST) {
                        Py_CLEAR(sq);
                        break;
                    }
                    PyObject *it = Py_NewRef(args[i].items[k].obj);
                    if (args[i].is_list)
                        PyList_SET_ITEM(sq, k, it);
                    else
                        PyTuple_SET_ITEM(sq, k, it);
                }
                if (sq != NULL) {
                    PyTuple_SET_ITEM(tup, i, sq);
                    continue;
                }
                if (PyErr_Occurred()) { /* no memory */
                    Py_DECREF(tup);
                    return -1;
                }
            }
            if (args[i].kind == V_DICT && args[i].op == 0 && i < npos && args[i].obj != NULL &&
                PyTuple_Check(args[i].obj) && PyTuple_GET_SIZE(args[i].obj) == args[i].n) {
                /* "{a}".format_map({...}) of constants: a dict of them */
                PyObject *dd = PyDict_New();
                for (int k = 0; dd && k < args[i].n; k++)
                    if (args[i].items[k].kind != V_CONST ||
                        PyDict_SetItem(dd, PyTuple_GET_ITEM(args[i].obj, k), args[i].items[k].obj) < 0)
                        Py_CLEAR(dd);
                if (dd != NULL) {
                    PyTuple_SET_ITEM(tup, i, dd);
                    continue;
                }
                if (PyErr_Occurred() && tc_clear_expected(PyExc_Exception) < 0) { /* no memory */
                    Py_DECREF(tup);
                    return -1;
                }
            }
            if (args[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "method of a constant with non-constant arguments");
            }
            if (i < npos)
                PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        if (nkw) {
            kw = PyDict_New();
            for (int i = 0; kw && i < nkw; i++)
                if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[npos + i].obj) < 0)
                    Py_CLEAR(kw);
            if (kw == NULL) {
                Py_DECREF(tup);
                return -1;
            }
        }
        PyObject *r = PyObject_Call(fn->obj, tup, kw);
        Py_DECREF(tup);
        Py_XDECREF(kw);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "constant method raised (eager will raise)");
        }
        return sym_const(t, r, out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION && npos == 1 && nkw == 0 && sym_is_inspect_signature(fn->obj) &&
        ((args[0].kind == V_FUNC && args[0].op == SYM_USER_FUNCTION) ||
         (args[0].kind == V_METHOD && PyFunction_Check(args[0].obj) && args[0].items[0].kind == V_OBJ))) {
        /* inspect.signature(f) of a guarded function or bound method: a constant */
        PyObject *target = args[0].kind == V_FUNC ? Py_NewRef(args[0].obj)
                                                  : PyMethod_New(args[0].obj, args[0].items[0].obj);
        PyObject *sig = target ? PyObject_CallOneArg(fn->obj, target) : NULL;
        Py_XDECREF(target);
        if (sig == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "inspect.signature raised");
        }
        return sym_const(t, sig, out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_PARTIAL)
        return sym_partial_call(t, fn, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->op == SYM_CUSTOM_OP)
        return sym_custom_op_call(t, fn, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->op == SYM_PREDICATE) {
        int a = sym_predicate(fn->obj);
        if (dh_is_compiling_fn(fn->obj)) {
            t->asked_compiling = 1;
            if (sym_obj_compiling_query(t) < 0)
                return -1;
        }
        if (a == 2 && (nargs || kwnames))
            return sym_fail(t, "%S with arguments", fn->obj);
        if (a == 2 && (a = sym_state_predicate(t, fn->obj)) < 0)
            return -1;
        return sym_const(t, PyBool_FromLong(a == 1), out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_CTX_EXIT && fn->val == SYM_GRADCTX_NOOP)
        return sym_const(t, Py_NewRef(Py_None), out); /* enable_grad() where grad was on */
    if (fn->kind == V_FUNC && fn->op == SYM_CTX_EXIT && fn->val >= SYM_GRADCTX_RESTORE) {
        t->nograd = fn->val - SYM_GRADCTX_RESTORE; /* enable_grad() inside no_grad(): off again */
        ic_set_grad_enabled(t->g, t->nograd == 0);
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_CTX_EXIT) { /* __exit__(None, None, None) */
        if (--t->nograd == 0)
            ic_set_grad_enabled(t->g, 1); /* training: values of the block pass no gradient */
        if (fn->val == 1 && t->infer_depth > 0 && --t->infer_depth == 0)
            sym_mark_inference(t, t->infer_from);
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if ((fn->kind == V_FUNC || fn->kind == V_CONST) && fn->obj != NULL && sym_is_grad_ctx_type(fn->obj)) {
        /* torch.no_grad() & co: a real context object (harmless to create), constant args;
         * V_CONST: the class as self.__class__ (the decorators' clone()) */
        PyObject *tup = PyTuple_New(npos);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < npos; i++) {
            if (args[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "grad-mode context with non-constant arguments");
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        if (nkw) {
            Py_DECREF(tup);
            return sym_fail(t, "grad-mode context with keywords");
        }
        int was_on = tc_grad_enabled();
        PyObject *ctx = PyObject_Call(fn->obj, tup, NULL);
        Py_DECREF(tup);
        if (tc_grad_enabled() != was_on) /* set_grad_enabled(b) switched it: the trace decides at the with */
            tc_set_grad_enabled(was_on);
        if (ctx == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "grad-mode context raised");
        }
        int on = sym_grad_ctx_turns_on(ctx);
        if (on >= 0 && sym_is_set_grad_enabled(ctx) && on != (was_on && t->nograd == 0)) {
            /* made, it switches grad mode (eager's __init__ does, with or without a with
             * statement): only one that changes nothing is captured */
            Py_DECREF(ctx);
            return sym_fail(t, "torch.set_grad_enabled(%s) switches grad mode where it is made: not captured",
                            on ? "True" : "False");
        }
        if (on < 0) {
            Py_DECREF(ctx);
            return -1;
        }
        /* set_grad_enabled(b) switches mode at construction: undo, the trace only needs the object */
        *out = sym_var(V_OBJ);
        out->obj = sym_keep(t, ctx);
        return out->obj ? 0 : -1;
    }
    if (fn->kind == V_CONST && fn->obj != NULL && PyType_Check(fn->obj)) {
        /* a class held as a constant (obj.__class__, type(obj)): called as the class */
        var w;
        if (sym_wrap(t, fn->obj, -1, &w) < 0)
            return -1;
        if (w.kind == V_FUNC)
            *fn = w;
    }
    if (fn->kind == V_FUNC && fn->op == SYM_MADE_FUNCTION)
        return sym_inline_made(t, fn, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION && is_dynamo_graph_break(fn->obj))
        /* torch._dynamo.graph_break(): a break here, as under torch.compile (in eager it
         * does nothing, which the call run at the break does too) */
        return sym_fail(t, "torch._dynamo.graph_break() called");
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION && nargs == 0 && t->ntfm == 0) {
        int rc = sym_tfm_default_device(t, fn->obj, out); /* sym_tfm.c: torch.get_default_device() */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION) {
        int rc = sym_obj_polyfill(t, fn, args, nargs, kwnames, out); /* functools.wraps & co */
        if (rc == 1)
            rc = sym_obj_deepcopy(t, fn, args, nargs, kwnames, out); /* obj_new.c */
        if (rc == 1)
            rc = sym_obj_copy(t, fn, args, nargs, kwnames, out); /* obj_new.c */
        return rc != 1 ? rc : sym_inline(t, fn->obj, fn->src, NULL, args, nargs, kwnames, out);
    }
    if (fn->kind == V_FUNC && fn->op >= 0 && t->tfm_active > 0) /* through the TorchFunctionMode (sym_tfm.c) */
        return fn->obj ? sym_tfm_dispatch(t, fn->obj, NULL, args, npos, kwnames, out)
                       : sym_fail(t, "a torch call inside a TorchFunctionMode block without its function");
    if (t->devctx != NULL) { /* a factory under torch.device(d) around the call (sym_tfm.c) */
        PyObject *own = NULL; /* torchc's own fast path of an op: the torch function it stands for */
        if (fn->kind == V_FUNC && fn->op >= 0 && (OPS[fn->op].where & W_TORCH) && fn->obj && dh_alias_of(fn->obj)) {
            PyObject *torch = PyImport_ImportModule("torch");
            own = torch ? PyObject_GetAttrString(torch, OPS[fn->op].name) : NULL;
            Py_XDECREF(torch);
            if (own == NULL && tc_clear_expected(PyExc_Exception) < 0)
                return -1;
        }
        int rc = sym_tfm_device_ctx(t, fn, own, args, nargs, kwnames, out);
        Py_XDECREF(own);
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->obj != NULL && fn->op >= -1) {
        /* complex operands or results: one ATen extern (ops_complex.c); a torch builtin
         * without a lowering is planned to see whether its result is complex */
        int kind = fn->op >= 0 ? 1 : sym_complex_fn(fn->obj), probe = 0;
        for (int i = 0; kind == 2 && fn->op == -1 && i < nargs && !probe; i++)
            probe = args[i].kind == V_TENSOR;
        PyObject *callee = fn->obj, *own = NULL;
        if (fn->op >= 0 && dh_alias_of(fn->obj)) { /* torchc's own eager fast path (dh_alias_op):
                                                     * the torch function of that op plans it */
            PyObject *mod = PyImport_ImportModule(OPS[fn->op].where & W_TORCH ? "torch"
                                                  : OPS[fn->op].where & W_LINALG ? "torch.linalg"
                                                                                 : "torch.nn.functional");
            own = mod ? PyObject_GetAttrString(mod, OPS[fn->op].name) : NULL;
            Py_XDECREF(mod);
            if (own == NULL && tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            if (own != NULL)
                callee = own;
        }
        int rc = kind ? sym_complex_call(t, callee, args, nargs, kwnames, probe, out) : 1;
        Py_XDECREF(own);
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op >= 0 && (OPS[fn->op].where & W_PF)) {
        int rc = sym_obj_polyfill(t, fn, args, nargs, kwnames, out); /* its own calls come back here */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op >= 0) {
        sym_fold f; /* built from constants only: computed now (fold.c) */
        int rc = fn->obj && !dh_alias_of(fn->obj)
                     ? sym_fold_call(t, fn->obj, OPS[fn->op].name, NULL, args, nargs, kwnames, &f, out)
                     : 1;
        if (rc != 1 && rc != 2)
            return rc;
        int rh = call_op(t, fn->op, args, npos, kwnames, kwv, out, fn->obj);
        if (rc == 2 && rh == 0 && sym_fold_attach(t, &f, out) < 0)
            return -1;
        sym_fold_clear(&f);
        return rh;
    }
    if (fn->kind == V_FUNC && fn->obj && sym_is_record_type(fn->obj))
        return sym_make_record(t, fn->obj, args, npos, kwnames, out);
    if (fn->kind == V_FUNC && fn->obj && PyType_Check(fn->obj) && sym_is_nn_module_type(fn->obj)) {
        int rc = sym_module_new(t, fn->obj, args, nargs, kwnames, out); /* ops_loss.c */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op == -1 && fn->obj && PyType_Check(fn->obj)) {
        int rc = sym_enum_call(t, fn, args, nargs, kwnames, out); /* obj_func.c: E(value) */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC && fn->op == -1 && sym_is_build_class(fn->obj)) /* a class statement (obj_new.c) */
        return sym_obj_build_class(t, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->obj && sym_obj_plain_class(fn->obj)) /* obj_new.c */
        return sym_obj_new(t, fn->obj, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC) { /* ops_models.c: torch.return_types.X((v, i)) in a polyfill */
        int rc = sym_return_types_call(t, fn->obj, args, nargs, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC) { /* obj_data.c: collections, iter/next, sorted */
        int rc = sym_data_call(t, fn, args, nargs, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_FUNC) {
        int rc = sym_obj_polyfill(t, fn, args, nargs, kwnames, out); /* obj_func.c */
        return rc != 1 ? rc : sym_call_builtin(t, fn, args, npos, kwnames, out);
    }
    if (fn->kind == V_METHOD && fn->items && (fn->items[0].kind == V_SEQ || fn->items[0].kind == V_DICT ||
                                              fn->items[0].kind == V_OBJ)) {
        int rc = sym_data_method(t, fn, args, npos, kwnames, out); /* obj_data.c: deque, sort(key=), dict */
        if (rc != 1)
            return rc;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && fn->items[0].obj == sym_os_environ()) {
        /* os.environ.get(k[, d]) of constants: asked now, the answer guarded */
        if (nkw || npos < 1 || npos > 2)
            return sym_fail(t, "os.environ.get with these arguments");
        PyObject *tup = PyTuple_New(npos), *m = PyObject_GetAttr(fn->items[0].obj, fn->obj);
        for (int i = 0; tup && i < npos; i++) {
            if (args[i].kind != V_CONST) {
                Py_CLEAR(tup);
                break;
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        int rc = tup && m ? sym_guarded_call(t, m, tup, out) : ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "os.environ.get of non-constants"));
        Py_XDECREF(tup);
        Py_XDECREF(m);
        return rc;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && PyContextVar_CheckExact(fn->items[0].obj)) {
        if (nkw)
            return sym_fail(t, "ContextVar method with keyword arguments");
        return sym_ctxvar_call(t, fn->items[0].obj, fn->items[0].src, PyUnicode_AsUTF8(fn->obj), args, npos, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && PyDict_Check(fn->items[0].obj) && fn->items[0].src >= 0) {
        /* super().get(k[, default]) / __getitem__ / __contains__ of a dict subclass: its
         * storage read through a guarded source, absence guarded */
        const var *d = &fn->items[0];
        const char *mn = PyUnicode_AsUTF8(fn->obj);
        int isget = !strcmp(mn, "get");
        if (nkw || npos < 1 || npos > (isget ? 2 : 1) || args[0].kind != V_CONST ||
            !PyUnicode_CheckExact(args[0].obj))
            return sym_fail(t, "dict.%s with these arguments not supported", mn);
        int has = sym_guard_key(t, d->src, d->obj, args[0].obj);
        if (has < 0)
            return -1;
        if (!strcmp(mn, "__contains__"))
            return sym_const(t, PyBool_FromLong(has), out);
        if (!has) {
            if (!isget)
                return sym_raise(t, PyExc_KeyError, args[0].obj, "KeyError %R (eager will raise)", args[0].obj);
            if (npos == 2) {
                *out = args[1];
                return 0;
            }
            return sym_const(t, Py_NewRef(Py_None), out);
        }
        PyObject *v = PyDict_GetItemWithError(d->obj, args[0].obj);
        if (v == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "dict lookup failed");
        }
        Py_INCREF(v);
        int s = sym_source(t, DH_S_ITEM, d->src, -1, args[0].obj);
        int rc = s < 0 ? -1 : sym_wrap(t, v, s, out);
        Py_DECREF(v);
        return rc;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_SEQ && fn->items[0].is_list &&
        fn->items[0].obj == NULL && fn->obj && PyUnicode_Check(fn->obj) && !nkw) {
        /* list methods, mutating ones with identity (objects.c) */
        return sym_list_method(t, &fn->items[0], PyUnicode_AsUTF8(fn->obj), args, npos, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_SEQ && fn->obj &&
        PyUnicode_Check(fn->obj)) {
        /* seq.index(x) / seq.count(x) over constants: on a tuple of them */
        const var *sq = &fn->items[0];
        PyObject *tup = PyTuple_New(sq->n), *r = NULL;
        if (tup == NULL)
            return -1;
        for (int i = 0; i < sq->n; i++) {
            if (sq->items[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "%U of a sequence of non-constants", fn->obj);
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(sq->items[i].obj));
        }
        for (int i = 0; i < nargs; i++)
            if (args[i].kind != V_CONST || nkw) {
                Py_DECREF(tup);
                return sym_fail(t, "%U with non-constant arguments", fn->obj);
            }
        PyObject *m = PyObject_GetAttr(tup, fn->obj);
        if (m != NULL) {
            PyObject *a = PyTuple_New(npos);
            for (int i = 0; a && i < npos; i++)
                PyTuple_SET_ITEM(a, i, Py_NewRef(args[i].obj));
            r = a ? PyObject_Call(m, a, NULL) : NULL;
            Py_XDECREF(a);
            Py_DECREF(m);
        }
        Py_DECREF(tup);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "%U raised (eager will raise)", fn->obj);
        }
        return sym_const(t, r, out);
    }
    if (fn->kind == V_METHOD && fn->items && sym_set_is_mutable(&fn->items[0]) && fn->obj &&
        PyUnicode_Check(fn->obj) && !nkw) {
        int rc = sym_set_method(t, &fn->items[0], PyUnicode_AsUTF8(fn->obj), args, npos, out);
        if (rc != 1)
            return rc;
        return sym_fail(t, "set.%U not supported", fn->obj);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_REC && PyUnicode_Check(fn->obj)) {
        if (kwnames && PyTuple_GET_SIZE(kwnames))
            return sym_fail(t, "record method with keyword arguments");
        const char *mn = PyUnicode_AsUTF8(fn->obj);
        if (mn == NULL || (strcmp(mn, "keys") && strcmp(mn, "values") && strcmp(mn, "items")))
            return sym_record_method(t, &fn->items[0], mn, npos, out);
        /* r.keys()/values()/items(): those of the dict of its non-None fields (below) */
        var *dv = sym_alloc(t, 1);
        if (dv == NULL || sym_record_view_dict(t, &fn->items[0], mn, dv) < 0)
            return -1;
        fn->items = dv;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_DICT) {
        /* d.items() / d.keys() / d.values() */
        const var *d = &fn->items[0];
        const char *mn = PyUnicode_AsUTF8(fn->obj);
        if (!strcmp(mn, "items") || !strcmp(mn, "values")) /* obj.__dict__: fresh, values wrapped */
            if (sym_dict_view_read(t, d) < 0)
                return -1;
        if (sym_dict_view_keys(t, d) < 0) /* (obj_dictview.c) */
            return -1;
        if (strcmp(mn, "items") && strcmp(mn, "keys") && strcmp(mn, "values")) {
            if (kwnames && PyTuple_GET_SIZE(kwnames))
                return sym_fail(t, "dict.%s with keyword arguments", mn);
            return sym_dict_method(t, d, mn, args, npos, out);
        }
        var *items = sym_alloc(t, d->n);
        if (items == NULL)
            return -1;
        for (int i = 0; i < d->n; i++) {
            if (!strcmp(mn, "values")) {
                items[i] = d->items[i];
                continue;
            }
            var key;
            if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)), &key) < 0)
                return -1;
            if (!strcmp(mn, "keys")) {
                items[i] = key;
                continue;
            }
            var *pair = sym_alloc(t, 2);
            if (pair == NULL)
                return -1;
            pair[0] = key;
            pair[1] = d->items[i];
            memset(&items[i], 0, sizeof items[i]);
            items[i].kind = V_SEQ;
            items[i].src = -1;
            items[i].n = 2;
            items[i].items = pair;
        }
        *out = sym_var(V_SEQ);
        out->n = d->n;
        out->items = items;
        return 0;
    }
    if (fn->kind == V_METHOD && PyFunction_Check(fn->obj))
        return sym_inline(t, fn->obj, fn->src, &fn->items[0], args, nargs, kwnames, out);
    if (fn->kind == V_METHOD) {
        var *self = &fn->items[0];
        if (self->kind == V_TENSOR && t->tfm_active > 0) { /* through the TorchFunctionMode (sym_tfm.c) */
            PyObject *d = sym_tfm_method(fn->obj);
            var *all = sym_alloc(t, nargs + 1);
            if (d == NULL || all == NULL)
                return all == NULL ? -1 : sym_fail(t, "Tensor.%U inside a TorchFunctionMode block not supported", fn->obj);
            all[0] = *self;
            for (int i = 0; i < nargs; i++)
                all[i + 1] = args[i];
            return sym_tfm_dispatch(t, d, NULL, all, npos + 1, kwnames, out);
        }
        if (self->kind == V_TENSOR && PyUnicode_Check(fn->obj)) { /* complex: ops_complex.c */
            int rc = sym_complex_method(t, self, fn->obj, args, nargs, kwnames, out);
            if (rc != 1)
                return rc;
        }
        if (self->kind == V_TENSOR) {
            int opi = sym_method_op(fn->obj);
            PyObject *base = NULL;
            if (opi < 0) {
                /* x.add_(y): the out-of-place op, then an in-place update of x */
                Py_ssize_t L = PyUnicode_GET_LENGTH(fn->obj);
                if (L > 1 && PyUnicode_READ_CHAR(fn->obj, L - 1) == '_' &&
                    PyUnicode_READ_CHAR(fn->obj, L - 2) != '_') {
                    if (sym_hconst(t, self) != NULL) { /* an update of constants themselves (fold.c) */
                        sym_fold f;
                        int rc = sym_fold_call(t, fn->obj, PyUnicode_AsUTF8(fn->obj), self, args, nargs, kwnames, &f, out);
                        sym_fold_clear(&f);
                        t->fold_ran = 0;
                        if (rc != 1 && rc != 2)
                            return rc;
                    }
                    base = PyUnicode_Substring(fn->obj, 0, L - 1);
                    if (base == NULL)
                        return -1;
                    opi = sym_method_op(base);
                    Py_DECREF(base);
                    if (opi >= 0 && (OPS[opi].fn == sym_h_transpose || OPS[opi].fn == sym_h_unsqueeze ||
                                     OPS[opi].fn == sym_h_squeeze)) {
                        /* t_/transpose_/unsqueeze_/squeeze_: the object becomes the view (alias_fn.c) */
                        var r;
                        if (call_method_op(t, opi, self, args, npos, kwnames, kwv, &r) < 0)
                            return -1;
                        if (sym_alias_rebind(t, self, &r) < 0)
                            return -1;
                        *out = *self;
                        sym_resolve(t, out);
                        return 0;
                    }
                    if (opi >= 0 && OPS[opi].fn != sym_h_binary && OPS[opi].fn != sym_h_add_sub &&
                        OPS[opi].fn != sym_h_div && OPS[opi].fn != sym_h_unary && OPS[opi].fn != sym_h_clamp &&
                        OPS[opi].fn != sym_h_gelu && OPS[opi].fn != sym_h_masked_fill && OPS[opi].fn != sym_h_addc &&
                        OPS[opi].fn != sym_h_index_fill && OPS[opi].fn != sym_h_index_add &&
                        OPS[opi].fn != sym_h_scatter_reduce &&
                        (OPS[opi].fn != sym_h_gather || OPS[opi].op == IC_EXT_GATHER))
                        opi = -1; /* scatter_/scatter_add_/scatter_reduce_ (no gather_): as index_add_ */
                    if (opi >= 0) {
                        if (sym_inplace_overlap_check(t, self, args, npos) < 0)
                            return -1;
                        /* index_add_ / scatter_ / scatter_add_ / scatter_reduce_: ATen's
                         * assert_no_overlap refuses self as the source too (elementwise ops take
                         * it: x.add_(x)) */
                        for (int i = 0; i < npos && (OPS[opi].fn == sym_h_index_add || OPS[opi].fn == sym_h_gather ||
                                                     OPS[opi].fn == sym_h_scatter_reduce); i++)
                            if (args[i].kind == V_TENSOR && args[i].oid > 0 && args[i].oid == self->oid)
                                return sym_fail(t, "Tensor.%U() with self as its source: some elements refer to a single "
                                                   "memory location (eager raises)", fn->obj);
                        var r;
                        if (call_method_op(t, opi, self, args, npos, kwnames, kwv, &r) < 0)
                            return -1;
                        if (r.kind != V_TENSOR || sym_mutate(t, self, r.val) < 0)
                            return sym_fail(t, "Tensor.%U() not supported", fn->obj);
                        *out = *self;
                        sym_resolve(t, out);
                        return 0;
                    }
                }
                /* a method with a polyfill of its own (torchc/_polyfills.py: Tensor.diag & co) */
                PyObject *descr = sym_refs.tensor_type ? PyObject_GetAttr(sym_refs.tensor_type, fn->obj) : NULL;
                if (descr == NULL) {
                    (void)tc_clear_expected(PyExc_AttributeError);
                } else {
                    int rc = sym_keep(t, descr) ? sym_obj_polyfill_func(t, descr, self, args, nargs, kwnames, out) : -1;
                    if (rc != 1)
                        return rc;
                }
                return sym_fail(t, "Tensor.%U() not supported", fn->obj);
            }
            if (OPS[opi].where & W_PF) { /* the polyfill first; its own calls come back here */
                PyObject *descr = sym_refs.tensor_type ? PyObject_GetAttr(sym_refs.tensor_type, fn->obj) : NULL;
                if (descr == NULL && tc_clear_expected(PyExc_AttributeError) < 0)
                    return -1;
                int rc = descr == NULL ? 1 : sym_keep(t, descr) ? sym_obj_polyfill_func(t, descr, self, args, nargs, kwnames, out) : -1;
                if (rc != 1)
                    return rc;
            }
            sym_fold f; /* built from constants only: computed now (fold.c) */
            int rc = sym_fold_call(t, fn->obj, PyUnicode_AsUTF8(fn->obj), self, args, nargs, kwnames, &f, out);
            if (rc != 1 && rc != 2)
                return rc;
            int rh = call_method_op(t, opi, self, args, npos, kwnames, kwv, out);
            if (rc == 2 && rh == 0 && sym_fold_attach(t, &f, out) < 0)
                return -1;
            sym_fold_clear(&f);
            return rh;
        }
        return sym_fail(t, "method %U of a non-tensor not supported", fn->obj);
    }
    if (fn->kind == V_OBJ && !PyModule_Check(fn->obj)) {
        int rc = lru_cached_call(t, fn, args, nargs, kwnames, out);
        if (rc != 1)
            return rc;
        return sym_inline_module(t, fn, args, nargs, kwnames, out);
    }
    return sym_fail(t, "call of a non-callable value");
}

/* x.shape, x.dtype, ... ; name NULL means shape (for size()). */
int sym_tensor_attr(trace *t, const var *x_in, PyObject *name, var *out) {
    var xr = *x_in; /* the object's current value (x.unsqueeze_(0) changed its shape) */
    sym_resolve(t, &xr);
    if (name != NULL && PyUnicode_Check(name) && sym_hconst(t, &xr) != NULL) {
        int rc = sym_fold_attr(t, &xr, name, out); /* a constant tensor's attribute (fold.c) */
        if (rc != 1)
            return rc;
    }
    if (t->tfm_active > 0) { /* a property read goes through the TorchFunctionMode (sym_tfm.c) */
        PyObject *g = sym_tfm_property(name);
        if (g != NULL)
            return sym_keep(t, g) == NULL ? -1 : sym_tfm_dispatch(t, g, sym_tfm_tensor_types(), &xr, 1, NULL, out);
    }
    const var *x = &xr;
    ic_meta m_copy = *sym_metap(t, x->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    const char *n = name ? PyUnicode_AsUTF8(name) : "shape";
    if (t->vm_depth > 0 && (!strcmp(n, "shape") || !strcmp(n, "ndim")) && sym_vmap_gate(t, n, x, 1) < 0)
        return -1; /* the per-sample shape of a mapped value (sym_vmap.c) */
    if (ic_dtype_is_complex(m->dtype)) { /* x.real, x.mH & co (ops_complex.c) */
        int rc = sym_complex_attr(t, x, n, out);
        if (rc != 1)
            return rc;
    }
    if (!strcmp(n, "shape") && m->dyn) {
        /* a tuple of (symbolic) ints */
        var *items = sym_alloc(t, m->ndim);
        if (items == NULL && m->ndim > 0)
            return -1;
        for (int i = 0; i < m->ndim; i++)
            if (sym_size_out(t, m, i, &items[i]) < 0)
                return -1;
        *out = sym_var(V_SEQ);
        out->n = m->ndim;
        out->items = items;
        return 0;
    }
    if (!strcmp(n, "shape")) {
        PyObject *tup = PyTuple_New(m->ndim);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < m->ndim; i++)
            PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(m->sizes[i]));
        PyObject *torch = PyImport_ImportModule("torch");
        PyObject *size = torch ? PyObject_CallMethod(torch, "Size", "(O)", tup) : NULL;
        Py_XDECREF(torch);
        Py_DECREF(tup);
        return sym_const(t, size, out);
    }
    if (!strcmp(n, "ndim"))
        return sym_const(t, PyLong_FromLong(m->ndim), out);
    if (!strcmp(n, "dtype"))
        return sym_const(t, Py_NewRef(sym_dtype_object(m->dtype)), out);
    int off = x->kind == V_TENSOR && x->val >= 0 && sym_home_off(t, x->val); /* a CPU tensor of a CUDA graph */
    if (!strcmp(n, "is_cuda"))
        return sym_const(t, PyBool_FromLong(!off && t->device_type == TC_DEV_CUDA), out);
    if (!strcmp(n, "is_cpu"))
        return sym_const(t, PyBool_FromLong(off || t->device_type != TC_DEV_CUDA), out);
    if (!strcmp(n, "is_nested") || !strcmp(n, "is_sparse") || !strcmp(n, "is_quantized") ||
        !strcmp(n, "is_meta") || !strcmp(n, "is_mkldnn")) /* such tensors are not captured */
        return sym_const(t, Py_NewRef(Py_False), out);
    if (!strcmp(n, "requires_grad") || !strcmp(n, "grad_fn") || !strcmp(n, "is_leaf")) {
        /* inputs: what their guard pinned; values computed in the graph never require grad
         * (inputs that require grad with grad mode on are not captured) */
        int rg = 0, input = 0;
        if (x->src >= 0)
            for (int i = 0; i < t->nguards; i++)
                if (t->guards[i].kind == DH_G_TENSOR && t->guards[i].src == x->src &&
                    t->srcdone[x->src] && t->srcvar[x->src].oid == x->oid)
                    rg = t->guards[i].meta.requires_grad, input = 1;
        if (n[0] == 'i') { /* is_leaf: no grad, or made to require grad in the graph */
            if (input && rg) /* its guard does not pin whether it is a leaf */
                return sym_fail(t, "Tensor.is_leaf of an input that requires grad left to eager");
            int leaf = input || x->val < 0 || ic_value_is_grad_leaf(t->g, x->val) || !sym_value_requires_grad(t, x->val);
            return sym_const(t, PyBool_FromLong(leaf), out);
        }
        if (!rg) /* training: a computed value requires grad as eager's would */
            rg = sym_value_requires_grad(t, x->val);
        int ng = rg ? 0 : sym_nograd_leaf(t, x->oid); /* made to require grad under no_grad */
        if (ng == 1)
            return sym_fail(t, "Tensor.%s of a view of a tensor made to require grad under no_grad left to eager", n);
        if (ng == 2)
            return sym_const(t, n[0] == 'g' ? Py_NewRef(Py_None) : Py_NewRef(Py_True), out);
        if (n[0] == 'g') /* grad_fn: None for a tensor that does not require grad (zero_grad's
                          * set_to_none=False reads it of each .grad); else eager's node */
            return rg ? sym_fail(t, "Tensor attribute 'grad_fn' of a tensor that requires grad not supported")
                      : sym_const(t, Py_NewRef(Py_None), out);
        return sym_const(t, PyBool_FromLong(rg), out);
    }
    if (!strcmp(n, "data")) {
        /* x.data: a new tensor sharing x's data, outside autograd: as x.detach() (the same
         * stop-gradient and aliasing; an in-place update through it is left to eager) */
        static const opdef detach_def = {"detach", W_METHOD, "input", sym_h_identity, 0};
        var *args[1] = {(var *)x};
        return sym_h_identity(t, &detach_def, args, out);
    }
    if (!strcmp(n, "grad")) /* a parameter's gradient: a source of its own (train_step.c) */
        return sym_tensor_grad(t, x_in, name, out);
    if (!strcmp(n, "device")) /* the graph's device, or the one eager's tensor lives on (fold.c sym_home) */
        return sym_const(t, off ? sym_home_device(sym_home(t, x->val)) : sym_graph_device(t), out);
    if (!strcmp(n, "T") || !strcmp(n, "mT")) {
        int nd = m->ndim, perm[IC_MAX_DIMS];
        for (int i = 0; i < nd; i++)
            perm[i] = n[0] == 'T' ? nd - 1 - i : i;
        if (n[0] == 'm') {
            if (nd < 2)
                return sym_fail(t, "mT of a tensor with < 2 dims");
            perm[nd - 1] = nd - 2;
            perm[nd - 2] = nd - 1;
        }
        /* below 2 dims too: a new view object, as eager's (x.T is not x) */
        return sym_view_out_desc(t, x, ic_permute(t->g, x->val, perm), out, "permute",
                             Py_BuildValue("(N)", sym_perm_tuple(perm, nd)));
    }
    int opi = sym_method_op(name);
    if (opi < 0 && name != NULL) {
        /* any other Tensor method: tracked as a bound method; calling it breaks the graph */
        PyObject *torch = PyImport_ImportModule("torch");
        PyObject *tt = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
        Py_XDECREF(torch);
        PyObject *m = tt ? PyObject_GetAttr(tt, name) : NULL;
        Py_XDECREF(tt);
        int callable = m != NULL && PyCallable_Check(m) && !PyType_Check(m);
        Py_XDECREF(m);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        if (callable)
            opi = NOPS; /* not in the table */
    }
    if (opi >= 0) {
        return sym_method(t, x, name, -1, out);
    }
    return sym_fail(t, "Tensor attribute '%s' not supported", n);
}
