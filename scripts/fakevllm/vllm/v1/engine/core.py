"""EngineCore.step: schedule -> execute_model -> sample_tokens -> update."""


class EngineCore:
    def __init__(self, worker, scheduler):
        self.worker = worker
        self.scheduler = scheduler

    def step(self) -> None:
        scheduler_output = self.scheduler.schedule()
        self.worker.execute_model(scheduler_output)
        model_output = self.worker.sample_tokens(None)
        self.scheduler.update_from_output(scheduler_output, model_output)

    def run_busy_loop(self) -> None:
        while self.scheduler.has_requests():
            self.step()
