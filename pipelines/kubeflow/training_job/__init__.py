"""The Trainer's training job across nodes: the TFJob or TrainJob its task creates.

- ``job_api``: what the task needs to know of a kind of job's API, and the job's name;
- ``tf_job``, ``train_job``: the object of each kind;
- ``worker_template``: what the compiled pipeline fixes of the job (``WorkerTemplate``);
- ``trainer_job_spec``: the compiler's side, the template put in the Trainer's task;
- ``job_runner``: the task's side: creates the job, waits for it, deletes it;
- ``trainer_resources``: the Trainer pod's accelerators, CPU and memory, its workers' too.

The executor the compiled pipeline names, ``kubeflow.job_trainer.Executor``, stays where
compiled pipelines (a recurring run's among them) find it.
"""
