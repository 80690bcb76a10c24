"""The schedulers' pure logic (no Django, no Celery): seed 000's load-aware server order with its pause
rule (`hybrid_sorting`), seed 004's staleness score (`staleness_score`), and the two papers' simulators, which drive
the same code the dispatcher and the active-scan sweep use (`sim_hybrid`, `sim_staleness`).
"""
