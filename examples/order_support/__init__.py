"""The worked example: an order-support agent that answers with another user's order."""
