"""kbgen - kernelbridge's binding generator.

parse.py turns core/include/kernelbridge.h into the model of model.py; each
module in kbgen/emitters/ turns the model into one language's files.
"""
