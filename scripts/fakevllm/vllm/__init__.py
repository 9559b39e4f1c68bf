"""A tiny stand-in for vLLM, used only by scripts/gen_sample_traces.py.

It is NOT vLLM. It mirrors the module paths, class names and method names of
vLLM's V1 engine (EngineCore -> Worker -> GPUModelRunner -> Sampler /
RejectionSampler / EagleProposer) so that PyTorch profiler traces recorded with
``with_stack=True`` carry python_function names that read like vLLM's.
"""
