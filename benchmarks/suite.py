"""TorchBench-style model suite: torchvision, timm and transformers models with random weights
(no downloads), inference, eager vs torchc vs torch.compile in one process.

Per model: status by the dynamo harness rule (pass / fail_accuracy / fail_to_run / eager_fail:
allclose against eager, else an RMSE test against a float64 eager reference); torchc's graphs,
breaks and reasons beside torch.compile's (torch._dynamo.explain); speedup over eager of both,
timed interleaved in the same loop (median); first-call seconds; peak memory (CUDA).

Results are written after every model (JSON), with a markdown table and a plot at the end:
    benchmarks/results/suite_<tag>.json / .md / .png

GPU (bf16, one 10-minute command; --budget stops starting models in time, --skip-done continues
a previous run's JSON):
    python benchmarks/suite.py --device cuda --dtype bfloat16 --timeout 120 --budget 420 \\
        --skip-done --tag h200
CPU smoke test (transformers only; tiny configs):
    python benchmarks/suite.py --device cpu --dtype float32 --suite transformers --tiny
Options: --suite torchvision,timm,transformers  --models a,b (substrings)  --list
         --torch-compile full|explain|none  --reps N  --batch N  --shard i/n
Cost on the GPU: torch.compile "full" takes ~20-90 s a model (inductor), "explain" ~5-20 s,
torchc ~1-3 s; --budget keeps one command within its limit and --skip-done resumes.
"""
import argparse
import copy
import gc
import json
import math
import os
import signal
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import tier_wait  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# ---- model table ------------------------------------------------------------------------------

class Scale:
    """Sizes of the transformers configs and inputs: GPU (small real-ish models) or tiny (CPU)."""

    def __init__(self, tiny, batch):
        if tiny:
            self.h, self.L, self.nh, self.kv, self.ff, self.V = 64, 2, 4, 2, 128, 512
            self.seq, self.B, self.img, self.mel = 16, batch or 2, 64, 16
        else:
            self.h, self.L, self.nh, self.kv, self.ff, self.V = 768, 6, 12, 4, 2048, 32000
            self.seq, self.B, self.img, self.mel = 256, batch or 8, 224, 80
        self.tiny = tiny
        self.hd = self.h // self.nh


def _ids(S, device, n=None):
    return torch.randint(3, S.V - 1, (S.B, n or S.seq), device=device)


def tv_models(S):
    """torchvision classification models: name -> (constructor, input shape)."""
    import torchvision.models as tvm
    img = S.img
    out = {}
    for name in ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "mobilenet_v2",
                 "mobilenet_v3_large", "mobilenet_v3_small", "efficientnet_b0", "efficientnet_v2_s",
                 "convnext_tiny", "regnet_y_400mf", "regnet_x_400mf", "shufflenet_v2_x1_0",
                 "squeezenet1_1", "densenet121", "vgg11_bn", "alexnet", "mnasnet1_0", "vit_b_16",
                 "swin_t"]:
        out["tv_" + name] = (lambda n=name: getattr(tvm, n)(weights=None), (3, img, img))
    out["tv_googlenet"] = (lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=True),
                           (3, img, img))
    out["tv_inception_v3"] = (lambda: tvm.inception_v3(weights=None, aux_logits=False, init_weights=True),
                              (3, 299, 299))
    return out


TIMM = ["resnet50d", "efficientnet_b0", "mobilevit_s", "ghostnet_100", "regnetx_002",
        "convnext_atto", "deit_tiny_patch16_224", "vit_small_patch16_224",
        "swin_tiny_patch4_window7_224", "mixer_b16_224", "poolformer_s12", "levit_128s",
        "dla34", "dpn68", "rexnet_100", "mixnet_s", "lcnet_050", "hrnet_w18_small",
        "cspdarknet53", "repvgg_a2", "tinynet_a", "fbnetc_100", "mobilenetv3_small_100",
        "beit_base_patch16_224", "pit_ti_224", "visformer_tiny", "edgenext_xx_small",
        "efficientformer_l1", "coat_lite_tiny", "crossvit_9_240"]


def timm_models(S):
    import timm

    def make(n):
        return timm.create_model(n, pretrained=False)

    def shape(n):
        try:
            cfg = timm.models.get_pretrained_cfg(n)
            return tuple(cfg.input_size)
        except Exception:
            return (3, 224, 224)
    return {"timm_" + n: (lambda n=n: make(n), shape(n)) for n in TIMM}


def hf_models(S):
    """transformers models from configs: name -> (constructor, input builder)."""
    import transformers as T
    h, L, nh, kv, ff, V, seq = S.h, S.L, S.nh, S.kv, S.ff, S.V, S.seq
    dec_in = lambda d: {"input_ids": _ids(S, d)}
    enc_in = lambda d: {"input_ids": _ids(S, d), "attention_mask": torch.ones(S.B, seq, dtype=torch.long, device=d)}
    s2s_in = lambda d: {"input_ids": _ids(S, d), "decoder_input_ids": _ids(S, d, max(seq // 2, 4))}
    common = dict(vocab_size=V, use_cache=False)
    llama_like = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, num_key_value_heads=kv,
                      intermediate_size=ff, max_position_embeddings=2 * seq + 64, **common)

    def m(model_cls, cfg_cls, **kw):
        def build():
            cfg = getattr(T, cfg_cls)(**kw)
            return getattr(T, model_cls)(cfg)
        return build

    out = {
        # decoders
        "hf_llama": (m("LlamaForCausalLM", "LlamaConfig", **llama_like), dec_in),
        "hf_mistral": (m("MistralForCausalLM", "MistralConfig", sliding_window=None, **llama_like), dec_in),
        "hf_qwen2": (m("Qwen2ForCausalLM", "Qwen2Config", **llama_like), dec_in),
        "hf_qwen3": (m("Qwen3ForCausalLM", "Qwen3Config", head_dim=S.hd, **llama_like), dec_in),
        "hf_gemma": (m("GemmaForCausalLM", "GemmaConfig", head_dim=S.hd, **llama_like), dec_in),
        "hf_gemma2": (m("Gemma2ForCausalLM", "Gemma2Config", head_dim=S.hd, **llama_like), dec_in),
        "hf_phi": (m("PhiForCausalLM", "PhiConfig", hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                     intermediate_size=ff, max_position_embeddings=2 * seq + 64, **common), dec_in),
        "hf_phi3": (m("Phi3ForCausalLM", "Phi3Config", pad_token_id=0, **llama_like), dec_in),
        "hf_stablelm": (m("StableLmForCausalLM", "StableLmConfig", **llama_like), dec_in),
        "hf_olmo": (m("OlmoForCausalLM", "OlmoConfig", pad_token_id=0, **llama_like), dec_in),
        "hf_mixtral": (m("MixtralForCausalLM", "MixtralConfig", num_local_experts=4, num_experts_per_tok=2,
                         **llama_like), dec_in),
        "hf_gpt2": (m("GPT2LMHeadModel", "GPT2Config", n_embd=h, n_layer=L, n_head=nh, n_positions=2 * seq + 64,
                      **common), dec_in),
        "hf_gpt_neo": (m("GPTNeoForCausalLM", "GPTNeoConfig", hidden_size=h, num_layers=L, num_heads=nh,
                         attention_types=[[["global", "local"], max(L // 2, 1)]], window_size=max(seq // 2, 4),
                         max_position_embeddings=2 * seq + 64, **common), dec_in),
        "hf_gptj": (m("GPTJForCausalLM", "GPTJConfig", n_embd=h, n_layer=L, n_head=nh, rotary_dim=S.hd // 2,
                      n_positions=2 * seq + 64, **common), dec_in),
        "hf_gpt_neox": (m("GPTNeoXForCausalLM", "GPTNeoXConfig", hidden_size=h, num_hidden_layers=L,
                          num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=2 * seq + 64,
                          **common), dec_in),
        "hf_codegen": (m("CodeGenForCausalLM", "CodeGenConfig", n_embd=h, n_layer=L, n_head=nh, rotary_dim=S.hd // 2,
                         n_positions=2 * seq + 64, n_ctx=2 * seq + 64, **common), dec_in),
        "hf_bloom": (m("BloomForCausalLM", "BloomConfig", hidden_size=h, n_layer=L, n_head=nh, **common), dec_in),
        "hf_opt": (m("OPTForCausalLM", "OPTConfig", hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                     ffn_dim=ff, word_embed_proj_dim=h, max_position_embeddings=2 * seq + 64, **common), dec_in),
        "hf_falcon": (m("FalconForCausalLM", "FalconConfig", hidden_size=h, num_hidden_layers=L,
                        num_attention_heads=nh, **common), dec_in),
        "hf_gpt_bigcode": (m("GPTBigCodeForCausalLM", "GPTBigCodeConfig", n_embd=h, n_layer=L, n_head=nh,
                             n_positions=2 * seq + 64, **common), dec_in),
        # encoders
        "hf_bert": (m("BertForMaskedLM", "BertConfig", hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                      intermediate_size=ff, max_position_embeddings=2 * seq + 64, vocab_size=V), enc_in),
        "hf_roberta": (m("RobertaForMaskedLM", "RobertaConfig", hidden_size=h, num_hidden_layers=L,
                         num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=2 * seq + 64,
                         vocab_size=V), enc_in),
        "hf_distilbert": (m("DistilBertForMaskedLM", "DistilBertConfig", dim=h, n_layers=L, n_heads=nh,
                            hidden_dim=ff, max_position_embeddings=2 * seq + 64, vocab_size=V), enc_in),
        "hf_albert": (m("AlbertForMaskedLM", "AlbertConfig", embedding_size=max(h // 4, 16), hidden_size=h,
                        num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                        max_position_embeddings=2 * seq + 64, vocab_size=V), enc_in),
        "hf_electra": (m("ElectraForMaskedLM", "ElectraConfig", embedding_size=h, hidden_size=h,
                         num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                         max_position_embeddings=2 * seq + 64, vocab_size=V), enc_in),
        "hf_deberta_v2": (m("DebertaV2ForMaskedLM", "DebertaV2Config", hidden_size=h, num_hidden_layers=L,
                            num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=2 * seq + 64,
                            vocab_size=V), enc_in),
        "hf_mpnet": (m("MPNetForMaskedLM", "MPNetConfig", hidden_size=h, num_hidden_layers=L, num_attention_heads=nh,
                       intermediate_size=ff, max_position_embeddings=2 * seq + 64, vocab_size=V), enc_in),
        "hf_xlm_roberta": (m("XLMRobertaForMaskedLM", "XLMRobertaConfig", hidden_size=h, num_hidden_layers=L,
                             num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=2 * seq + 64,
                             vocab_size=V), enc_in),
        # encoder-decoders
        "hf_t5": (m("T5ForConditionalGeneration", "T5Config", d_model=h, d_kv=S.hd, d_ff=ff, num_layers=L,
                    num_decoder_layers=L, num_heads=nh, **common), s2s_in),
        "hf_bart": (m("BartForConditionalGeneration", "BartConfig", d_model=h, encoder_layers=L, decoder_layers=L,
                      encoder_attention_heads=nh, decoder_attention_heads=nh, encoder_ffn_dim=ff,
                      decoder_ffn_dim=ff, max_position_embeddings=2 * seq + 64, **common), s2s_in),
        "hf_mbart": (m("MBartForConditionalGeneration", "MBartConfig", d_model=h, encoder_layers=L, decoder_layers=L,
                       encoder_attention_heads=nh, decoder_attention_heads=nh, encoder_ffn_dim=ff,
                       decoder_ffn_dim=ff, max_position_embeddings=2 * seq + 64, **common), s2s_in),
        "hf_pegasus": (m("PegasusForConditionalGeneration", "PegasusConfig", d_model=h, encoder_layers=L,
                         decoder_layers=L, encoder_attention_heads=nh, decoder_attention_heads=nh,
                         encoder_ffn_dim=ff, decoder_ffn_dim=ff, max_position_embeddings=2 * seq + 64,
                         **common), s2s_in),
        "hf_whisper": (m("WhisperForConditionalGeneration", "WhisperConfig", d_model=h, encoder_layers=L,
                         decoder_layers=L, encoder_attention_heads=nh, decoder_attention_heads=nh,
                         encoder_ffn_dim=ff, decoder_ffn_dim=ff, num_mel_bins=S.mel,
                         max_source_positions=seq, max_target_positions=2 * seq + 64, pad_token_id=0,
                         bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                         begin_suppress_tokens=None, suppress_tokens=None, **common),
                       lambda d: {"input_features": torch.randn(S.B, S.mel, 2 * seq, device=d),
                                  "decoder_input_ids": _ids(S, d, max(seq // 4, 4))}),
        # vision transformers in transformers
        "hf_vit": (m("ViTForImageClassification", "ViTConfig", hidden_size=h, num_hidden_layers=L,
                     num_attention_heads=nh, intermediate_size=ff, image_size=S.img, patch_size=16 if not S.tiny else 8),
                   lambda d: {"pixel_values": torch.randn(S.B, 3, S.img, S.img, device=d)}),
        "hf_convnext": (m("ConvNextForImageClassification", "ConvNextConfig",
                          hidden_sizes=[h // 8, h // 4, h // 2, h] if not S.tiny else [8, 16, 32, 64],
                          depths=[1, 1, 2, 1] if S.tiny else [2, 2, 6, 2]),
                        lambda d: {"pixel_values": torch.randn(S.B, 3, S.img, S.img, device=d)}),
    }
    out.update(hf_models_more(S, m, common, llama_like, dec_in, enc_in, s2s_in))
    return out


def hf_models_more(S, m, common, llama_like, dec_in, enc_in, s2s_in):
    """more transformers families, chosen for the code they exercise (vision CNNs and windowed
    attention, audio front ends, multimodal towers, MoE routing, state-space scans, relative
    position biases, FFT mixing): name -> (constructor, input builder)."""
    h, L, nh, ff, V, seq, img, hd = S.h, S.L, S.nh, S.ff, S.V, S.seq, S.img, S.hd
    pix = lambda d: {"pixel_values": torch.randn(S.B, 3, img, img, device=d)}
    pos = 2 * seq + 64
    bert_like = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                     max_position_embeddings=pos, vocab_size=V)
    vit_like = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                    image_size=img, patch_size=8 if S.tiny else 16)
    bart_like = dict(d_model=h, encoder_layers=L, decoder_layers=L, encoder_attention_heads=nh,
                     decoder_attention_heads=nh, encoder_ffn_dim=ff, decoder_ffn_dim=ff,
                     max_position_embeddings=pos, **common)
    # widths of the four stages of a CNN / hierarchical vision model
    w4 = [8, 16, 32, 64] if S.tiny else [h // 8, h // 4, h // 2, h]
    d4 = [1, 1, 1, 1] if S.tiny else [2, 2, 4, 2]
    n_audio = 1600 if S.tiny else 16000
    wav = lambda d: {"input_values": torch.randn(S.B, n_audio, device=d)}
    w2v = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
               conv_dim=(16, 16, 16) if S.tiny else (256, 256, 256, 256), conv_stride=(5, 2, 2) if S.tiny else (5, 2, 2, 2),
               conv_kernel=(10, 3, 3) if S.tiny else (10, 3, 3, 3), num_conv_pos_embeddings=16,
               num_conv_pos_embedding_groups=4, vocab_size=32, pad_token_id=0)
    text_tower = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                      vocab_size=V, max_position_embeddings=pos)
    vis_tower = dict(hidden_size=h, num_hidden_layers=L, num_attention_heads=nh, intermediate_size=ff,
                     image_size=img, patch_size=8 if S.tiny else 16)
    clip_in = lambda d: {"input_ids": _ids(S, d), "pixel_values": torch.randn(S.B, 3, img, img, device=d),
                         "attention_mask": torch.ones(S.B, seq, dtype=torch.long, device=d)}
    moe = dict(num_experts=4, num_experts_per_tok=2)
    return {
        # vision
        "hf_deit": (m("DeiTForImageClassificationWithTeacher", "DeiTConfig", **vit_like), pix),
        "hf_beit": (m("BeitForImageClassification", "BeitConfig", use_relative_position_bias=True,
                      use_mean_pooling=True, layer_scale_init_value=0.1, **vit_like), pix),
        "hf_dinov2": (m("Dinov2Model", "Dinov2Config", hidden_size=h, num_hidden_layers=L,
                        num_attention_heads=nh, image_size=img, patch_size=8 if S.tiny else 14), pix),
        "hf_swin": (m("SwinForImageClassification", "SwinConfig", image_size=img, patch_size=4,
                      embed_dim=w4[0] * 2, depths=d4, num_heads=[1, 2, 4, 8] if S.tiny else [3, 6, 12, 24],
                      window_size=2 if S.tiny else 7), pix),
        "hf_resnet": (m("ResNetForImageClassification", "ResNetConfig", embedding_size=w4[0], hidden_sizes=w4,
                        depths=d4, layer_type="bottleneck"), pix),
        "hf_regnet": (m("RegNetForImageClassification", "RegNetConfig", embedding_size=w4[0], hidden_sizes=w4,
                        depths=d4, groups_width=8, layer_type="y"), pix),
        "hf_mobilenet_v2": (m("MobileNetV2ForImageClassification", "MobileNetV2Config", image_size=img,
                              depth_multiplier=0.35 if S.tiny else 1.0), pix),
        "hf_mobilevit": (m("MobileViTForImageClassification", "MobileViTConfig", image_size=img,
                           hidden_sizes=[16, 24, 32] if S.tiny else [144, 192, 240],
                           neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64] if S.tiny else
                           [16, 32, 64, 96, 128, 160, 640]), pix),
        "hf_segformer": (m("SegformerForSemanticSegmentation", "SegformerConfig", depths=d4, hidden_sizes=w4,
                           num_attention_heads=[1, 1, 2, 4] if S.tiny else [1, 2, 5, 8],
                           decoder_hidden_size=w4[-1], num_labels=4), pix),
        "hf_convnextv2": (m("ConvNextV2ForImageClassification", "ConvNextV2Config", hidden_sizes=w4, depths=d4), pix),
        "hf_poolformer": (m("PoolFormerForImageClassification", "PoolFormerConfig", hidden_sizes=w4, depths=d4), pix),
        "hf_efficientnet": (m("EfficientNetForImageClassification", "EfficientNetConfig", image_size=img,
                              width_coefficient=0.25 if S.tiny else 1.0, depth_coefficient=0.2 if S.tiny else 1.0,
                              hidden_dim=320 if S.tiny else 1280), pix),
        "hf_levit": (m("LevitForImageClassification", "LevitConfig", image_size=img,
                       hidden_sizes=[16, 32, 48] if S.tiny else [128, 256, 384], num_attention_heads=[1, 2, 3] if S.tiny
                       else [4, 6, 8], depths=[1, 1, 1] if S.tiny else [2, 3, 4], key_dim=[8, 8, 8] if S.tiny else [16, 16, 16]),
                     pix),
        "hf_pvt_v2": (m("PvtV2ForImageClassification", "PvtV2Config", image_size=img, hidden_sizes=w4, depths=d4,
                        num_attention_heads=[1, 1, 2, 4] if S.tiny else [1, 2, 5, 8]), pix),
        "hf_focalnet": (m("FocalNetForImageClassification", "FocalNetConfig", image_size=img, embed_dim=w4[0] * 2,
                          depths=d4), pix),
        "hf_cvt": (m("CvtForImageClassification", "CvtConfig", embed_dim=[16, 32, 64] if S.tiny else [64, 192, 384],
                     num_heads=[1, 2, 4] if S.tiny else [1, 3, 6], depth=[1, 2, 3] if S.tiny else [1, 2, 10]), pix),
        # multimodal and audio
        "hf_clip": (m("CLIPModel", "CLIPConfig", text_config=text_tower, vision_config=vis_tower,
                      projection_dim=h), clip_in),
        "hf_siglip": (m("SiglipModel", "SiglipConfig", text_config=text_tower, vision_config=vis_tower),
                      lambda d: {"input_ids": _ids(S, d), "pixel_values": torch.randn(S.B, 3, img, img, device=d)}),
        "hf_wav2vec2": (m("Wav2Vec2ForCTC", "Wav2Vec2Config", **w2v), wav),
        "hf_hubert": (m("HubertForCTC", "HubertConfig", **w2v), wav),
        "hf_wavlm": (m("WavLMForCTC", "WavLMConfig", **w2v), wav),
        "hf_speecht5": (m("SpeechT5ForSpeechToText", "SpeechT5Config", hidden_size=h, encoder_layers=L,
                          decoder_layers=L, encoder_attention_heads=nh, decoder_attention_heads=nh,
                          encoder_ffn_dim=ff, decoder_ffn_dim=ff, conv_dim=w2v["conv_dim"],
                          conv_stride=w2v["conv_stride"], conv_kernel=w2v["conv_kernel"],
                          num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=V,
                          max_text_positions=pos, max_speech_positions=4 * pos, use_cache=False),
                        lambda d: {"input_values": torch.randn(S.B, n_audio, device=d),
                                   "decoder_input_ids": _ids(S, d, max(seq // 2, 4))}),
        "hf_ast": (m("ASTForAudioClassification", "ASTConfig", hidden_size=h, num_hidden_layers=L,
                     num_attention_heads=nh, intermediate_size=ff, num_mel_bins=S.mel, max_length=4 * seq),
                   lambda d: {"input_values": torch.randn(S.B, 4 * seq, S.mel, device=d)}),
        "hf_speech2text": (m("Speech2TextForConditionalGeneration", "Speech2TextConfig", d_model=h,
                             encoder_layers=L, decoder_layers=L, encoder_attention_heads=nh,
                             decoder_attention_heads=nh, encoder_ffn_dim=ff, decoder_ffn_dim=ff,
                             input_feat_per_channel=S.mel, max_source_positions=4 * seq, max_target_positions=pos,
                             conv_channels=h, **common),
                           lambda d: {"input_features": torch.randn(S.B, 4 * seq, S.mel, device=d),
                                      "decoder_input_ids": _ids(S, d, max(seq // 2, 4))}),
        # decoders
        "hf_mpt": (m("MptForCausalLM", "MptConfig", d_model=h, n_layers=L, n_heads=nh, max_seq_len=pos,
                     **common), dec_in),
        "hf_qwen2_moe": (m("Qwen2MoeForCausalLM", "Qwen2MoeConfig", moe_intermediate_size=ff // 2,
                           shared_expert_intermediate_size=ff, **moe, **llama_like), dec_in),
        "hf_olmoe": (m("OlmoeForCausalLM", "OlmoeConfig", **moe, **llama_like), dec_in),
        "hf_mamba": (m("MambaForCausalLM", "MambaConfig", hidden_size=h, num_hidden_layers=L, state_size=8,
                       expand=2, conv_kernel=4, **common), dec_in),
        "hf_granite": (m("GraniteForCausalLM", "GraniteConfig", **llama_like), dec_in),
        "hf_cohere": (m("CohereForCausalLM", "CohereConfig", **llama_like), dec_in),
        "hf_starcoder2": (m("Starcoder2ForCausalLM", "Starcoder2Config", sliding_window=None, **llama_like), dec_in),
        "hf_persimmon": (m("PersimmonForCausalLM", "PersimmonConfig", hidden_size=h, num_hidden_layers=L,
                           num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=pos,
                           **common), dec_in),
        "hf_gemma3": (m("Gemma3ForCausalLM", "Gemma3TextConfig", head_dim=hd, sliding_window=max(seq // 2, 4),
                        **llama_like), dec_in),
        "hf_xglm": (m("XGLMForCausalLM", "XGLMConfig", d_model=h, num_layers=L, attention_heads=nh, ffn_dim=ff,
                      max_position_embeddings=pos, **common), dec_in),
        "hf_biogpt": (m("BioGptForCausalLM", "BioGptConfig", **bert_like, use_cache=False), dec_in),
        "hf_openai_gpt": (m("OpenAIGPTLMHeadModel", "OpenAIGPTConfig", n_embd=h, n_layer=L, n_head=nh,
                            n_positions=pos, vocab_size=V), dec_in),
        # encoders
        "hf_deberta": (m("DebertaForMaskedLM", "DebertaConfig", relative_attention=True,
                         pos_att_type=["c2p", "p2c"], **bert_like), enc_in),
        "hf_funnel": (m("FunnelForMaskedLM", "FunnelConfig", d_model=h, n_head=nh, d_head=hd, d_inner=ff,
                        block_sizes=[1, 1], num_decoder_layers=1, vocab_size=V), enc_in),
        "hf_convbert": (m("ConvBertForMaskedLM", "ConvBertConfig", embedding_size=h, **bert_like), enc_in),
        "hf_squeezebert": (m("SqueezeBertForMaskedLM", "SqueezeBertConfig", embedding_size=h, **bert_like), enc_in),
        "hf_xlnet": (m("XLNetLMHeadModel", "XLNetConfig", d_model=h, n_layer=L, n_head=nh, d_inner=ff,
                       vocab_size=V, use_mems_eval=False), enc_in),
        "hf_fnet": (m("FNetForMaskedLM", "FNetConfig", hidden_size=h, num_hidden_layers=L, intermediate_size=ff,
                      max_position_embeddings=pos, vocab_size=V), lambda d: {"input_ids": _ids(S, d)}),
        "hf_roformer": (m("RoFormerForMaskedLM", "RoFormerConfig", **bert_like), enc_in),
        "hf_esm": (m("EsmForMaskedLM", "EsmConfig", position_embedding_type="rotary", pad_token_id=1,
                     mask_token_id=2, **bert_like), enc_in),
        "hf_modernbert": (m("ModernBertForMaskedLM", "ModernBertConfig", hidden_size=h, num_hidden_layers=L,
                            num_attention_heads=nh, intermediate_size=ff, max_position_embeddings=pos,
                            vocab_size=V, local_attention=max(seq // 2, 4), pad_token_id=0, bos_token_id=1,
                            eos_token_id=2, cls_token_id=1, sep_token_id=2), enc_in),
        "hf_big_bird": (m("BigBirdForMaskedLM", "BigBirdConfig", attention_type="original_full", **bert_like),
                        enc_in),
        "hf_megatron_bert": (m("MegatronBertForMaskedLM", "MegatronBertConfig", **bert_like), enc_in),
        # encoder-decoders
        "hf_marian": (m("MarianMTModel", "MarianConfig", decoder_start_token_id=0, pad_token_id=0, **bart_like),
                      s2s_in),
        "hf_m2m100": (m("M2M100ForConditionalGeneration", "M2M100Config", **bart_like), s2s_in),
        "hf_blenderbot": (m("BlenderbotForConditionalGeneration", "BlenderbotConfig", **bart_like), s2s_in),
        "hf_plbart": (m("PLBartForConditionalGeneration", "PLBartConfig", **bart_like), s2s_in),
        "hf_mt5": (m("MT5ForConditionalGeneration", "MT5Config", d_model=h, d_kv=hd, d_ff=ff, num_layers=L,
                     num_decoder_layers=L, num_heads=nh, **common), s2s_in),
        "hf_switch_transformers": (m("SwitchTransformersForConditionalGeneration", "SwitchTransformersConfig",
                                     d_model=h, d_kv=hd, d_ff=ff, num_layers=L, num_decoder_layers=L,
                                     num_sparse_encoder_layers=1, num_sparse_decoder_layers=1, num_heads=nh,
                                     num_experts=4, **common),
                                   # an explicit mask: without one the encoder leaves it None
                                   # while compiling (is_torchdynamo_compiling) and raises, also
                                   # under torch.compile
                                   lambda d: dict(s2s_in(d), attention_mask=torch.ones(S.B, seq, dtype=torch.long,
                                                                                       device=d))),
        "hf_prophetnet": (m("ProphetNetForConditionalGeneration", "ProphetNetConfig", hidden_size=h,
                            encoder_ffn_dim=ff, decoder_ffn_dim=ff, num_encoder_layers=L, num_decoder_layers=L,
                            num_encoder_attention_heads=nh, num_decoder_attention_heads=nh, ngram=2,
                            max_position_embeddings=pos, **common), s2s_in),
    }


def all_models(S, suites):
    table = []  # (suite, name, build, inputs(device))
    for suite in suites:
        try:
            if suite == "torchvision":
                for n, (b, shp) in tv_models(S).items():
                    table.append((suite, n, b, lambda d, shp=shp: {"x": torch.randn(S.B, *shp, device=d)}))
            elif suite == "timm":
                for n, (b, shp) in timm_models(S).items():
                    table.append((suite, n, b, lambda d, shp=shp: {"x": torch.randn(S.B, *shp, device=d)}))
            elif suite == "transformers":
                for n, (b, inp) in hf_models(S).items():
                    table.append((suite, n, b, inp))
            else:
                raise ValueError(f"unknown suite {suite}")
        except ImportError as e:
            print(f"suite {suite} unavailable: {e}", flush=True)
    return table


# ---- accuracy (the dynamo harness rule) ----------------------------------------------------------

def tensors_of(out):
    """every tensor of a model output, in a fixed order (ModelOutput, tuples, dicts)"""
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors_of(o)]
    return []


def rmse(a, b):
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item()


def same(ref, res, fp64, tol):
    """dynamo's rule: allclose(ref, res); else RMSE(res, fp64) <= m * RMSE(ref, fp64) + tol / 10"""
    if len(ref) != len(res):
        return False, f"{len(res)} outputs, eager {len(ref)}"
    for i, (a, b) in enumerate(zip(ref, res)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, f"output {i}: {tuple(b.shape)} {b.dtype}, eager {tuple(a.shape)} {a.dtype}"
        if not a.is_floating_point():
            if not torch.equal(a, b):
                return False, f"output {i}: integer values differ"
            continue
        if torch.allclose(a.float(), b.float(), atol=tol, rtol=tol, equal_nan=True):
            continue
        if fp64 is None:
            return False, f"output {i}: not allclose (no fp64 reference)"
        f = fp64[i]
        mult = 3.0 if a.dtype in (torch.float16, torch.bfloat16) else 2.0
        re, ee = rmse(f, b), rmse(f, a)
        if not (re <= mult * ee + tol / 10.0) or math.isnan(re):
            return False, f"output {i}: rmse {re:.3g} vs eager's {ee:.3g} (fp64 reference)"
    return True, None


# ---- timing --------------------------------------------------------------------------------------

def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed_call(fn, inputs, device):
    sync(device)
    t0 = time.perf_counter()
    out = fn(**inputs)
    sync(device)
    return time.perf_counter() - t0, out


def interleaved(fns, inputs, device, reps, warmup=2):
    """median seconds per call of each fn, the calls of one rep back to back"""
    for _ in range(warmup):
        for f in fns.values():
            f(**inputs)
    tier_wait()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            times[k].append(timed_call(f, inputs, device)[0])
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("per-model time limit")


def peak_reset(device):
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def peak_mb(device):
    return torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None


# ---- one model ----------------------------------------------------------------------------------

def cast_inputs(inputs, dtype):
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}


def run_model(suite, name, build, make_inputs, a, dtype, tol):
    dev = a.device
    row = {"suite": suite, "name": name, "status": None}
    torch.manual_seed(0)
    try:
        model = build().eval()
        inputs = make_inputs(dev)
    except Exception as e:
        row.update(status="eager_fail", error=f"build: {type(e).__name__}: {str(e)[:300]}")
        return row
    with torch.no_grad():
        # float64 reference (CPU for memory safety when the model is large on the GPU)
        fp64 = None
        try:
            m64 = copy.deepcopy(model).to(dev, torch.float64)
            fp64 = [t.detach() for t in tensors_of(m64(**cast_inputs(inputs, torch.float64)))]
            del m64
        except Exception as e:
            row["fp64_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        model = model.to(dev, dtype)
        inputs = cast_inputs(inputs, dtype)
        try:
            peak_reset(dev)
            t_e, out = timed_call(model, inputs, dev)
            ref = [t.detach().clone() for t in tensors_of(out)]
            row["eager_peak_mb"] = peak_mb(dev)
        except Exception as e:
            row.update(status="eager_fail", error=f"{type(e).__name__}: {str(e)[:300]}")
            return row
        row["outputs"] = len(ref)
        fns = {"eager": model}
        # torchc
        torchc.reset()
        try:
            cm = torchc.compile(model)
            peak_reset(dev)
            t_c, out = timed_call(cm, inputs, dev)
            row["torchc_first_s"] = t_c
            ok, why = same(ref, tensors_of(out), fp64, tol)
            t_c2, out2 = timed_call(cm, inputs, dev)
            row["torchc_second_call_s"] = t_c2
            row["torchc_peak_mb"] = peak_mb(dev)
            ex = torchc.explain(cm)(**inputs)
            row.update(torchc_graphs=ex.graph_count, torchc_breaks=ex.graph_break_count,
                       torchc_reasons=sorted(set(r.split(": ", 1)[-1][:200] for r in ex.break_reasons)),
                       torchc_extern=len(ex.extern_calls))
            row["status"] = "pass" if ok else "fail_accuracy"
            if why:
                row["accuracy"] = why
            fns["torchc"] = cm
        except Timeout:
            raise
        except Exception as e:
            row.update(status="fail_to_run", error=f"{type(e).__name__}: {str(e)[:300]}",
                       trace=traceback.format_exc(limit=-4)[-1500:])
        # torch.compile: compiled and timed ("full"), or only its graphs and breaks ("explain")
        if a.torch_compile == "explain":
            try:
                import torch._dynamo as dynamo
                dynamo.reset()
                ex = dynamo.explain(model)(**inputs)
                row.update(inductor_graphs=ex.graph_count, inductor_breaks=ex.graph_break_count,
                           inductor_reasons=sorted(set(str(getattr(r, "reason", r))[:200]
                                                       for r in ex.break_reasons)))
            except Timeout:
                raise
            except Exception as e:
                row["inductor_explain_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        if a.torch_compile == "full":
            try:
                import torch._dynamo as dynamo
                dynamo.reset()
                tm = torch.compile(model)
                t_i, out = timed_call(tm, inputs, dev)
                row["inductor_first_s"] = t_i
                ok, why = same(ref, tensors_of(out), fp64, tol)
                row["inductor_status"] = "pass" if ok else "fail_accuracy"
                if why:
                    row["inductor_accuracy"] = why
                timed_call(tm, inputs, dev)
                row["inductor_peak_mb"] = peak_mb(dev)
                fns["inductor"] = tm
                try:
                    ex = dynamo.explain(model)(**inputs)
                    row.update(inductor_graphs=ex.graph_count, inductor_breaks=ex.graph_break_count,
                               inductor_reasons=sorted(set(str(getattr(r, "reason", r))[:200]
                                                           for r in ex.break_reasons)))
                except Exception as e:
                    row["inductor_explain_error"] = f"{type(e).__name__}: {str(e)[:200]}"
            except Timeout:
                raise
            except Exception as e:
                row.update(inductor_status="fail_to_run", inductor_error=f"{type(e).__name__}: {str(e)[:300]}")
        # interleaved timing
        if a.reps > 0:
            med = interleaved(fns, inputs, dev, a.reps)
            row["eager_ms"] = med["eager"] * 1e3
            for k in ("torchc", "inductor"):
                if k in med:
                    row[f"{k}_ms"] = med[k] * 1e3
                    row[f"{k}_speedup"] = med["eager"] / med[k]
    return row


# ---- report -------------------------------------------------------------------------------------

def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def summary(rows):
    done = [r for r in rows if r.get("status") not in (None, "running")]
    s = {"models": len(done)}
    for st in ("pass", "fail_accuracy", "fail_to_run", "eager_fail"):
        s[st] = sum(r["status"] == st for r in done)
    ran = [r for r in done if r.get("torchc_graphs") is not None]
    s["torchc_one_graph"] = sum(r["torchc_graphs"] == 1 and r["torchc_breaks"] == 0 for r in ran)
    s["inductor_one_graph"] = sum(r.get("inductor_graphs") == 1 and r.get("inductor_breaks") == 0 for r in ran)
    iw = [r for r in ran if r.get("inductor_graphs") == 1 and r.get("inductor_breaks") == 0]
    s["torchc_whole_where_inductor_whole"] = (f"{sum(r['torchc_graphs'] == 1 and r['torchc_breaks'] == 0 for r in iw)}"
                                              f"/{len(iw)}")
    both = [r for r in done if r.get("torchc_speedup") and r.get("inductor_speedup")]
    s["geomean_torchc"] = geomean([r["torchc_speedup"] for r in both])
    s["geomean_inductor"] = geomean([r["inductor_speedup"] for r in both])
    s["geomean_models"] = len(both)
    tcs = [r["torchc_first_s"] for r in done if r.get("torchc_first_s")]
    ics = [r["inductor_first_s"] for r in done if r.get("inductor_first_s")]
    s["mean_first_call_torchc_s"] = sum(tcs) / len(tcs) if tcs else None
    s["mean_first_call_inductor_s"] = sum(ics) / len(ics) if ics else None
    s["slower_than_eager"] = [r["name"] for r in done if r.get("torchc_speedup") and r["torchc_speedup"] < 1.0]
    return s


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def write_table(rows, path, meta):
    s = summary(rows)
    lines = [f"# Model suite: {meta['device']} {meta['dtype']} (torch {meta['torch']}, {meta['when']})", "",
             "| suite | model | status | torchc graphs/breaks | torch.compile graphs/breaks | torchc x | "
             "torch.compile x | torchc first s | torch.compile first s | eager ms | peak MB eager/torchc | "
             "torchc reasons |", "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['suite']} | {r['name']} | {r.get('status')} | "
            f"{fmt(r.get('torchc_graphs'), 'd')}/{fmt(r.get('torchc_breaks'), 'd')} | "
            f"{fmt(r.get('inductor_graphs'), 'd')}/{fmt(r.get('inductor_breaks'), 'd')} | "
            f"{fmt(r.get('torchc_speedup'), '.2f')} | {fmt(r.get('inductor_speedup'), '.2f')} | "
            f"{fmt(r.get('torchc_first_s'), '.2f')} | {fmt(r.get('inductor_first_s'), '.1f')} | "
            f"{fmt(r.get('eager_ms'), '.2f')} | {fmt(r.get('eager_peak_mb'), '.0f')}/{fmt(r.get('torchc_peak_mb'), '.0f')} | "
            f"{'; '.join(r.get('torchc_reasons', []))[:160] or r.get('error', '')[:160] or r.get('accuracy', '') or ''} |")
    lines += ["", "Summary: " + json.dumps(s)]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return s


def write_plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rs = [r for r in rows if r.get("torchc_speedup")]
    if not rs:
        return False
    fig, ax = plt.subplots(figsize=(max(10, 0.28 * len(rs)), 4.8))
    x = range(len(rs))
    ax.bar([i - 0.2 for i in x], [r["torchc_speedup"] for r in rs], 0.4, label="torchc")
    ax.bar([i + 0.2 for i in x], [r.get("inductor_speedup") or 0 for r in rs], 0.4, label="torch.compile")
    for i, r in enumerate(rs):
        if r.get("torchc_graphs", 1) != 1 or r.get("torchc_breaks", 0):
            ax.text(i - 0.2, r["torchc_speedup"], str(r.get("torchc_graphs")), fontsize=6, ha="center", va="bottom")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(list(x))
    ax.set_xticklabels([r["name"] for r in rs], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("speedup over eager (log); number: torchc graphs when > 1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


# ---- driver -------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="torchvision,timm,transformers")
    ap.add_argument("--models", default=None, help="comma-separated substrings of model names")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default=None, help="bfloat16 (GPU default) or float32 (CPU default)")
    ap.add_argument("--tiny", action="store_true", help="tiny configs and inputs (CPU tests)")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--reps", type=int, default=None, help="interleaved timed calls (median)")
    ap.add_argument("--timeout", type=float, default=180, help="seconds per model")
    ap.add_argument("--budget", type=float, default=None,
                    help="start no model after this many seconds (the run ends in time)")
    ap.add_argument("--torch-compile", choices=["full", "explain", "none"], default="full",
                    help="torch.compile compiled and timed, only torch._dynamo.explain'd "
                         "(graphs and breaks, no inductor compile), or not run")
    ap.add_argument("--no-torch-compile", action="store_true", help="same as --torch-compile none")
    ap.add_argument("--skip-done", action="store_true", help="keep rows of the JSON already written")
    ap.add_argument("--shard", default=None, help="i/n: every n-th model from the i-th (1-based)")
    ap.add_argument("--tag", default=None, help="results file name: suite_<tag>.*")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args(argv)
    if a.no_torch_compile:
        a.torch_compile = "none"
    dtype = getattr(torch, a.dtype or ("bfloat16" if a.device == "cuda" else "float32"))
    tol = 1e-2 if dtype in (torch.bfloat16, torch.float16) else 1e-4
    if a.reps is None:
        a.reps = 20 if a.device == "cuda" else 3
    S = Scale(a.tiny, a.batch)
    table = all_models(S, [s.strip() for s in a.suite.split(",") if s.strip()])
    if a.models:
        pats = [p for p in a.models.split(",") if p]
        table = [t for t in table if any(p in t[1] for p in pats)]
    if a.shard:
        i, n = map(int, a.shard.split("/"))
        table = table[i - 1::n]
    if a.list:
        for t in table:
            print(t[0], t[1])
        return 0
    tag = a.tag or f"{a.device}_{str(dtype).split('.')[-1]}{'_tiny' if a.tiny else ''}"
    os.makedirs(RESULTS, exist_ok=True)
    base = os.path.join(RESULTS, f"suite_{tag}")
    meta = {"device": a.device, "dtype": str(dtype), "torch": torch.__version__, "tiny": a.tiny,
            "batch": S.B, "reps": a.reps, "tol": tol, "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if a.device == "cuda":
        meta["gpu"] = torch.cuda.get_device_name()
    rows = []
    if a.skip_done and os.path.exists(base + ".json"):
        with open(base + ".json") as f:
            rows = json.load(f).get("rows", [])
    done = {r["name"] for r in rows}

    def save():
        with open(base + ".json.tmp", "w") as f:
            json.dump({"meta": meta, "summary": summary(rows), "rows": rows}, f, indent=1)
        os.replace(base + ".json.tmp", base + ".json")

    t_start = time.time()
    old = signal.signal(signal.SIGALRM, _alarm)
    print(f"{'model':24s} {'status':14s} {'tc g/b':>7s} {'tch g/b':>7s} {'tc x':>6s} {'tch x':>6s} "
          f"{'tc 1st':>7s} {'tch 1st':>7s}  reasons", flush=True)
    try:
        for suite, name, build, inputs in table:
            if name in done:
                continue
            if a.budget and time.time() - t_start > a.budget:
                print(f"budget of {a.budget:.0f} s reached: stopping before {name}", flush=True)
                break
            # a process that dies inside a model leaves this record behind
            rows.append({"suite": suite, "name": name, "status": "fail_to_run",
                         "error": "the process died running this model"})
            save()
            t0 = time.time()
            signal.setitimer(signal.ITIMER_REAL, a.timeout)
            try:
                row = run_model(suite, name, build, inputs, a, dtype, tol)
            except Timeout:
                row = {"suite": suite, "name": name, "status": "fail_to_run",
                       "error": f"timeout after {a.timeout:.0f} s"}
            except Exception as e:  # anything left: recorded, the run goes on
                row = {"suite": suite, "name": name, "status": "fail_to_run",
                       "error": f"{type(e).__name__}: {str(e)[:300]}"}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            row["seconds"] = time.time() - t0
            rows[-1] = row
            save()
            reasons = "; ".join(row.get("torchc_reasons", []))[:90] or row.get("error", "")[:90] or \
                row.get("accuracy", "") or ""
            print(f"{name:24s} {row['status']:14s} "
                  f"{fmt(row.get('torchc_graphs'), 'd'):>3s}/{fmt(row.get('torchc_breaks'), 'd'):<3s} "
                  f"{fmt(row.get('inductor_graphs'), 'd'):>3s}/{fmt(row.get('inductor_breaks'), 'd'):<3s} "
                  f"{fmt(row.get('torchc_speedup'), '6.2f')} {fmt(row.get('inductor_speedup'), '6.2f')} "
                  f"{fmt(row.get('torchc_first_s'), '7.2f')} {fmt(row.get('inductor_first_s'), '7.1f')}  {reasons}",
                  flush=True)
            gc.collect()
            if a.device == "cuda":
                torch.cuda.empty_cache()
    finally:
        signal.signal(signal.SIGALRM, old)
        save()
        s = write_table(rows, base + ".md", meta)
        plotted = write_plot(rows, base + ".png")
        print("summary:", json.dumps(s), flush=True)
        print(f"wrote {base}.json, {base}.md" + (f", {base}.png" if plotted else " (no matplotlib: no plot)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
