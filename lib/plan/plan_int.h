/*
 * Internal interface of lib/plan: the parameter and FLOP pieces that the
 * evaluation (evaluate.c) needs per pipeline stage and per GPU, defined in
 * formulas.c next to the published formulas they add up to.
 */
#ifndef SN_PLAN_INT_H
#define SN_PLAN_INT_H

#include <sn/plan.h>

/* Attention weights and biases, both norms and the MoE router of one
 * layer: the part of a layer outside the MLP. */
double sn__plan_layer_attn(const struct sn_plan_model *m);
/* The same without the router (a dense layer of a MoE model). */
double sn__plan_attn_only(const struct sn_plan_model *m);
/* Layers with routed experts: layers - dense_layers for MoE, else 0. */
uint32_t sn__plan_moe_layers(const struct sn_plan_model *m);
/* Weights and biases of a dense layer's MLP (dense_ffn) of a MoE model. */
double sn__plan_dense_mlp(const struct sn_plan_model *m);
/* Weights and biases of one MLP (one expert). */
double sn__plan_mlp(const struct sn_plan_model *m);
/* Norm parameters of one norm layer. */
double sn__plan_norm(const struct sn_plan_model *m);
/* Forward FLOPs per token of one layer, averaged over the layers: the
 * linear layers (top_k routed and the shared experts, or the dense MLP)
 * and the attention core (QK^T and attention over V, 4 s h). */
double sn__plan_layer_linear_flops(const struct sn_plan_model *m);
double sn__plan_layer_core_flops(const struct sn_plan_model *m);
/* Forward FLOPs per token of the output (logit) layer, 2 h V. */
double sn__plan_logit_flops(const struct sn_plan_model *m);

/* Evaluates everything but the checkpoint plan; the sweep's inner loop.
 * The input must have passed sn_plan_check(). */
void sn__plan_eval_step(const struct sn_plan_input *in, struct sn_plan_result *out);

#endif
