"""xform.numpy"""
