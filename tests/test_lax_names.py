"""xform.lax has every public name of jax.lax, or the name is listed here with the reason."""

import jax.lax as jlax

import xform.lax as xlax

NOT_YET = {
    'AccuracyMode', 'ConvGeneralDilatedDimensionNumbers', 'DotAlgorithm', 'DotAlgorithmPreset',
    'DotDimensionNumbers', 'PrecisionLike', 'RaggedDotDimensionNumbers', 'RandomAlgorithm',
    'Tolerance', 'after_all', 'after_all_p', 'approx_max_k', 'approx_min_k', 'approx_top_k_p',
    'axis_size', 'batch_matmul', 'bessel_i0e', 'bessel_i0e_p', 'bessel_i1e', 'bessel_i1e_p',
    'betainc', 'broadcast_like', 'broadcast_shapes', 'broadcast_to_rank', 'clz', 'clz_p',
    'collapse', 'complex', 'complex_p', 'composite', 'conv_general_dilated_local',
    'conv_general_dilated_patches', 'conv_general_shape_tuple', 'conv_shape_tuple',
    'conv_transpose', 'conv_transpose_shape_tuple', 'copy_p', 'create_token', 'create_token_p',
    'dce_sink', 'dce_sink_p', 'device_put_p', 'dtype', 'empty', 'eq_to_p', 'igamma',
    'igamma_grad_a', 'igamma_grad_a_p', 'igamma_p', 'igammac', 'igammac_p', 'index_take',
    'le_to_p', 'lt_to_p', 'mulhi', 'mulhi_p', 'optimization_barrier', 'optimization_barrier_p',
    'pbroadcast', 'pcast', 'platform_dependent', 'polygamma', 'polygamma_p', 'precv', 'psend',
    'pswapaxes', 'ragged_all_to_all', 'ragged_all_to_all_p', 'ragged_dot',
    'ragged_dot_general', 'random_gamma_grad', 'reciprocal', 'reduce', 'reduce_p',
    'reduce_precision', 'reduce_precision_p', 'reduce_window', 'reduce_window_max_p',
    'reduce_window_min_p', 'reduce_window_p', 'reduce_window_shape_tuple',
    'reduce_window_sum_p', 'regularized_incomplete_beta_p', 'rng_bit_generator',
    'rng_bit_generator_p', 'rng_uniform', 'rng_uniform_p', 'scaled_dot', 'scatter_apply',
    'scatter_sub', 'scatter_sub_p', 'select_and_gather_add_p', 'select_and_scatter_add_p',
    'select_and_scatter_p', 'shape_as_value', 'sharding_constraint_p', 'split', 'split_p',
    'square', 'square_p', 'stack', 'stack_p', 'stage', 'stage_p', 'tile', 'tile_p', 'unstack',
    'unstack_p', 'with_sharding_constraint', 'zeta', 'zeta_p',
}

# Names that cannot mean the same thing in xform, each with the reason.
EXEMPT = {
}


def test_the_names_of_jax_lax():
    public = {n for n in dir(jlax) if not n.startswith("_")}
    missing = {n for n in public if not hasattr(xlax, n)}
    assert missing - NOT_YET - set(EXEMPT) == set(), \
        f"xform.lax lost {sorted(missing - NOT_YET - set(EXEMPT))}"
    arrived = NOT_YET - missing
    assert not arrived, f"xform.lax now has {sorted(arrived)}: drop them from NOT_YET"
