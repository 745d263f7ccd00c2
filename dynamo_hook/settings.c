/* settings.c — the frontend's rows of the settings table (inductor_c/ic_config.h) read where
 * the frame hook uses them: the limits of one trace, at the start of each capture. */
#include "dh_internal.h"

void dh_settings_read(void) {
    dh_limit.max_sources = (int)ic_config_int(IC_CFG_max_sources);
    dh_limit.inline_depth = (int)ic_config_int(IC_CFG_inline_depth);
    dh_limit.max_outputs = (int)ic_config_int(IC_CFG_max_outputs);
    dh_limit.max_trace_steps = (long)ic_config_int(IC_CFG_max_trace_steps);
    dh_limit.max_dict_items = (int)ic_config_int(IC_CFG_max_dict_items);
    dh_limit.max_index_inputs = (int)ic_config_int(IC_CFG_max_index_inputs);
    dh_limit.max_unroll = (int)ic_config_int(IC_CFG_max_unroll);
    dh_limit.max_cat_inputs = (int)ic_config_int(IC_CFG_max_cat_inputs);
    dh_limit.rnn_unroll_steps = (int)ic_config_int(IC_CFG_rnn_unroll_steps);
}
