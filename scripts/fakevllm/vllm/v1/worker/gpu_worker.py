"""GPU worker: wraps the model runner's execute_model in the step annotation."""
import torch


class Worker:
    def __init__(self, model_runner):
        self.model_runner = model_runner

    def annotate_profile(self, scheduler_output):
        # vLLM 0.14+ grammar: execute_context_<n>(<tokens>)_generation_<n>(<tokens>)
        so = scheduler_output
        name = (f"execute_context_{so.num_context_reqs}({so.num_context_tokens})"
                f"_generation_{so.num_generation_reqs}({so.num_generation_tokens})")
        return torch.profiler.record_function(name)

    def execute_model(self, scheduler_output):
        with self.annotate_profile(scheduler_output):
            output = self.model_runner.execute_model(scheduler_output)
        return output

    def sample_tokens(self, grammar_output=None):
        return self.model_runner.sample_tokens(grammar_output)
